import { type ChatInputCommandInteraction, InteractionContextType, SlashCommandBuilder } from 'discord.js';
import { describeRefusal } from '../src/budget/index.ts';
import type { Command, Deps } from '../src/discord/command.ts';
import { formatCount } from '../src/discord/member-facing.ts';
import { acknowledgeEphemeral } from '../src/discord/replies.ts';
import { resolveSpeaker } from '../src/members/speakers.ts';
import { compilePronunciations, normaliseSpeech } from '../src/text/normalise.ts';
import { countCharacters, MAX_TEXT_CHARACTERS } from '../src/tts/index.ts';
import { sendVoiceMessage, USER_INSTALL_LEDGER_ID, userInstallRefusal } from '../src/voice-message/index.ts';
import { BLOCKED, sayInVoice, speakerAutocomplete } from './shared.ts';

/** The option that sends the speech as a voice message in the channel instead of saying it in voice. */
const VOICE_MESSAGE_OPTION = 'voice-message';

export const speak = {
  data: new SlashCommandBuilder()
    .setName('speak')
    .setDescription('Say something in your voice channel.')
    .setContexts(InteractionContextType.Guild)
    .addStringOption((option) => option.setName('text').setDescription('What to say').setRequired(true))
    .addStringOption((option) =>
      option.setName('speaker').setDescription('A voice for this message (name or id)').setAutocomplete(true),
    )
    .addBooleanOption((option) =>
      option
        .setName(VOICE_MESSAGE_OPTION)
        .setDescription('Send it here as a voice message instead of saying it in your voice channel'),
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
    const tooLong = lengthRefusal(characters);
    if (tooLong !== undefined) return reply(tooLong);
    if (interaction.options.getBoolean(VOICE_MESSAGE_OPTION) === true) {
      return asVoiceMessage(interaction, deps, { text, ledgerId: interaction.guildId, reply });
    }
    const channel = interaction.member.voice.channel;
    if (!channel) {
      return reply(
        `Join a voice channel first, then use /speak; or send it here as a voice message with ${VOICE_MESSAGE_OPTION}:True.`,
      );
    }
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

    return sayInVoice(interaction, deps, {
      channel,
      text,
      speaker: choice.speaker,
      characters,
      reply,
    });
  },

  autocomplete: speakerAutocomplete,

  // Installed to the member's account only (a DM, a server Herald is not in): a voice message, counted against
  // the member's daily allowance; no server, so no dictionary nor block list.
  async executeUserInstall(interaction, deps) {
    const reply = acknowledgeEphemeral(interaction, deps.logger);
    const text = interaction.options.getString('text', true);
    const tooLong = lengthRefusal(countCharacters(text.trim()));
    if (tooLong !== undefined) return reply(tooLong);
    return asVoiceMessage(interaction, deps, {
      text,
      ledgerId: USER_INSTALL_LEDGER_ID,
      reply,
      admit: () =>
        userInstallRefusal(deps.budget, deps.userInstall, interaction.user.id, countCharacters(text)),
    });
  },
} satisfies Command;

/** The sentence for a text /speak refuses by its length; undefined when it may be said. */
function lengthRefusal(characters: number): string | undefined {
  if (characters === 0) return 'There is nothing to say: the text is empty.';
  if (characters > MAX_TEXT_CHARACTERS) {
    return `That text is ${formatCount(characters)} characters; the limit is ${formatCount(MAX_TEXT_CHARACTERS)}.`;
  }
  return undefined;
}

/** `/speak voice-message:True`: the member's voice (or the option's), posted as a voice message where asked. */
async function asVoiceMessage(
  interaction: ChatInputCommandInteraction,
  deps: Deps,
  o: {
    readonly text: string;
    readonly ledgerId: string;
    readonly reply: (content: string) => Promise<void>;
    readonly admit?: () => Promise<string | undefined>;
  },
): Promise<void> {
  const choice = await resolveSpeaker(
    deps,
    o.ledgerId,
    interaction.user.id,
    interaction.options.getString('speaker') ?? undefined,
  );
  switch (choice.kind) {
    case 'unknown-option':
      return o.reply(`There is no voice called “${choice.option}”. See /voices.`);
    case 'no-speakers':
      return o.reply('The speech service lists no voices right now.');
    case 'chosen':
      break;
  }
  const name = interaction.inCachedGuild() ? interaction.member.displayName : interaction.user.displayName;
  return sendVoiceMessage(interaction, deps, {
    request: {
      text: o.text,
      speaker: choice.speaker,
      requestedBy: { id: interaction.user.id, name },
      // Nothing is queued: a failure is the answer's edit, told by sendVoiceMessage.
      onFailure: () => {},
    },
    ledgerId: o.ledgerId,
    characters: countCharacters(o.text),
    acknowledge: o.reply,
    ...(o.admit ? { admit: o.admit } : {}),
  });
}
