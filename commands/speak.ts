import { InteractionContextType, MessageFlags, SlashCommandBuilder } from 'discord.js';
import { describeRefusal } from '../src/budget/index.ts';
import type { Command } from '../src/command.ts';
import { formatCount } from '../src/numbers.ts';
import { acknowledgeEphemeral, describeFailure, NO_MENTIONS } from '../src/replies.ts';
import { resolveSpeaker } from '../src/speakers.ts';
import { compilePronunciations, normaliseSpeech } from '../src/text/normalise.ts';
import { countCharacters, MAX_TEXT_CHARACTERS } from '../src/tts/index.ts';
import { describeJoinRefusal, describeQueueFull, speakerAutocomplete } from './shared.ts';

export const speak = {
  data: new SlashCommandBuilder()
    .setName('speak')
    .setDescription('Say something in your voice channel.')
    .setContexts(InteractionContextType.Guild)
    .addStringOption((option) => option.setName('text').setDescription('What to say').setRequired(true))
    .addStringOption((option) =>
      option.setName('speaker').setDescription('A voice for this message (name or id)').setAutocomplete(true),
    ),

  async execute(interaction, deps) {
    // Everything below may wait on the network (the voice list, a join): acknowledge within Discord's 3 s first.
    const reply = acknowledgeEphemeral(interaction, deps.logger);
    const [blocked, dictionary] = await Promise.all([
      deps.members.blocked(interaction.guildId, interaction.user.id),
      deps.members.dictionary(interaction.guildId),
    ]);
    if (blocked) return reply(BLOCKED);
    // The dictionary applies before the length limit and the cost estimate, as for auto-read.
    const text = normaliseSpeech(interaction.options.getString('text', true), {
      pronunciations: compilePronunciations(dictionary),
    });
    const characters = countCharacters(text.trim());
    if (characters === 0) return reply('There is nothing to say: the text is empty.');
    if (characters > MAX_TEXT_CHARACTERS) {
      return reply(
        `That text is ${formatCount(characters)} characters; the limit is ${formatCount(MAX_TEXT_CHARACTERS)}.`,
      );
    }
    const channel = interaction.member.voice.channel;
    if (!channel) return reply('Join a voice channel first, then use /speak.');
    // Counted on the text as sent, as the guard counts it again when the utterance is synthesised; what is
    // already queued counts too, so a member cannot queue past the limits and be refused later.
    const verdict = await deps.budget.check(
      { guildId: interaction.guildId, userId: interaction.user.id, characters: countCharacters(text) },
      deps.voice.queued(interaction.guildId, interaction.user.id),
    );
    if (verdict.kind !== 'ok') return reply(describeRefusal(verdict));

    const choice = await resolveSpeaker(
      deps,
      interaction.guildId,
      interaction.user.id,
      interaction.options.getString('speaker') ?? undefined,
    );
    switch (choice.kind) {
      case 'unknown-option':
        return reply(`There is no voice called “${choice.option}”. See /voices.`);
      case 'no-speakers':
        return reply('The speech service lists no voices right now.');
      case 'chosen':
        break;
    }

    const outcome = deps.voice.join(channel, interaction.channel ?? undefined);
    if (outcome.kind !== 'joined' && outcome.kind !== 'already-here') {
      return reply(describeJoinRefusal(outcome));
    }
    let acknowledged: Promise<void> = new Promise(() => {});
    const queued = outcome.session.enqueue({
      text,
      speaker: choice.speaker,
      requestedBy: { id: interaction.user.id, name: interaction.member.displayName },
      onFailure: (error) => {
        const message = `I could not say “${preview(text)}”: ${describeFailure(error, deps.logger)}`;
        // A failure can come back before the reply below is sent; a follow-up needs that reply first.
        acknowledged
          .then(() =>
            interaction.followUp({
              content: message,
              flags: MessageFlags.Ephemeral,
              allowedMentions: NO_MENTIONS,
            }),
          )
          .catch((followUpError: unknown) =>
            deps.logger.warn('could not report a failed utterance', { err: followUpError }),
          );
      },
    });
    if (queued.kind === 'queue-full') return reply(describeQueueFull(queued));
    const cost = deps.estimateCostUsd(characters);
    // A join held back by Discord's gateway rate or a burst of joins: say how long, rather than "now" and a
    // failure later.
    const joinWaitS = Math.ceil(outcome.session.joinWaitMs() / 1000);
    const parts = [
      joinWaitS > 0
        ? `Joining your channel, about ${joinWaitS} s (Discord paces joins), then speaking as ${choice.speaker.name}`
        : queued.ahead === 0
          ? `Speaking now as ${choice.speaker.name}`
          : `Queued at position ${queued.ahead + 1} as ${choice.speaker.name}`,
      `${formatCount(characters)} characters`,
      ...(cost === undefined ? [] : [`about $${cost.toFixed(4)}`]),
    ];
    acknowledged = reply(`${parts.join(' · ')}.`);
    return acknowledged;
  },

  autocomplete: speakerAutocomplete,
} satisfies Command;

const BLOCKED = 'An admin of this server has blocked you from having Herald speak for you here.';

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 60 ? `${flat.slice(0, 57)}…` : flat;
}
