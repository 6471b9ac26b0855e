import {
  ActionRowBuilder,
  ApplicationCommandType,
  ButtonBuilder,
  type ButtonInteraction,
  ButtonStyle,
  ContextMenuCommandBuilder,
  InteractionContextType,
  type Message,
  PermissionFlagsBits,
} from 'discord.js';
import { spokenTextOf, toSpeakOf } from '../src/autoread/spoken.ts';
import { describeRefusal } from '../src/budget/index.ts';
import type { Deps, MessageCommand } from '../src/discord/command.ts';
import { acknowledgeEphemeral } from '../src/discord/replies.ts';
import { resolveSpeaker } from '../src/members/speakers.ts';
import { countCharacters, type Speaker } from '../src/tts/index.ts';
import { sendVoiceMessage } from '../src/voice-message/index.ts';
import { BLOCKED, sayInVoice } from './shared.ts';

const NAME = 'Read aloud';
// The button a member not in voice gets: `Read aloud:voice-message:<message id>` (the message is fetched again).
const VOICE_MESSAGE_BUTTON = 'voice-message';

/**
 * "Read aloud" (right-click a message → Apps): Herald says one message in the caller's voice channel as auto-read
 * would say it (the server's dictionary, spoken names, "<name> said", links and emoji, the author's voice). The
 * caller asks and pays in the rate limits; the server's budget pays the service. Not in voice: the answer offers
 * the same speech as a voice message.
 */
export const readAloud = {
  data: new ContextMenuCommandBuilder()
    .setName(NAME)
    .setType(ApplicationCommandType.Message)
    .setContexts(InteractionContextType.Guild),

  async execute(interaction, deps) {
    // The settings, dictionary, voice list and a join may wait on the network: answer within Discord's 3 s.
    const reply = acknowledgeEphemeral(interaction, deps.logger);
    const refusal = mayRead(interaction.memberPermissions);
    if (refusal !== undefined) return reply(refusal);
    const message = interaction.targetMessage;
    const speech = await speechOf(message, interaction.user.id, deps);
    if (speech.kind === 'refused') return reply(speech.sentence);
    const channel = interaction.member.voice.channel;
    if (!channel) {
      const offer = new ButtonBuilder()
        .setCustomId(`${NAME}:${VOICE_MESSAGE_BUTTON}:${message.id}`)
        .setLabel('Send it as a voice message')
        .setStyle(ButtonStyle.Primary);
      return reply('Join a voice channel to hear it there, or have it here as a voice message.', {
        components: [new ActionRowBuilder<ButtonBuilder>().addComponents(offer)],
      });
    }
    // As /speak: refused now rather than after waiting in the queue, with what is queued counted.
    const verdict = await deps.budget.check(
      { guildId: interaction.guildId, userId: interaction.user.id, characters: speech.characters },
      deps.voice.queued(interaction.guildId, interaction.user.id),
    );
    if (verdict.kind !== 'ok') return reply(describeRefusal(verdict));
    return sayInVoice(interaction, deps, {
      channel,
      text: speech.text,
      speaker: speech.speaker,
      characters: speech.characters,
      reply,
      // Deleted before it is said: withdrawn, as auto-read withdraws it.
      key: message.id,
    });
  },

  async button(interaction: ButtonInteraction<'cached'>, deps: Deps) {
    const [, kind, messageId = ''] = interaction.customId.split(':');
    if (kind !== VOICE_MESSAGE_BUTTON) return;
    const reply = acknowledgeEphemeral(interaction, deps.logger);
    const refusal = mayRead(interaction.memberPermissions);
    if (refusal !== undefined) return reply(refusal);
    const message = await interaction.channel?.messages.fetch(messageId).catch(() => undefined);
    if (!message) return reply('That message is gone, so there is nothing to read.');
    const speech = await speechOf(message, interaction.user.id, deps);
    if (speech.kind === 'refused') return reply(speech.sentence);
    return sendVoiceMessage(interaction, deps, {
      request: {
        text: speech.text,
        speaker: speech.speaker,
        requestedBy: { id: interaction.user.id, name: interaction.member.displayName },
        onFailure: () => {},
      },
      ledgerId: interaction.guildId,
      characters: speech.characters,
      acknowledge: reply,
    });
  },
} satisfies MessageCommand;

/** A message as Herald would say it, or why it will not. */
type Speech =
  | { readonly kind: 'ready'; readonly text: string; readonly speaker: Speaker; readonly characters: number }
  | { readonly kind: 'refused'; readonly sentence: string };

/** The sentence for a caller who may not read the channel; undefined when they may. */
function mayRead(permissions: { has(bits: bigint): boolean }): string | undefined {
  // Discord lists the message only to members who see the channel; a crafted request is still refused.
  return permissions.has(PermissionFlagsBits.ViewChannel | PermissionFlagsBits.ReadMessageHistory)
    ? undefined
    : 'You can’t read that channel, so I won’t read its messages to you.';
}

/** What Herald says for `message`, read for `callerId`: auto-read's text of it, in its author's voice. */
async function speechOf(message: Message<true>, callerId: string, deps: Deps): Promise<Speech> {
  const guildId = message.guildId;
  const author = message.author;
  const [callerBlocked, authorBlocked, settings, dictionary, spokenName] = await Promise.all([
    deps.members.blocked(guildId, callerId),
    deps.members.blocked(guildId, author.id),
    deps.autoread.settings(guildId),
    deps.members.dictionary(guildId),
    deps.members.spokenName(guildId, author.id),
  ]);
  if (callerBlocked) return { kind: 'refused', sentence: BLOCKED };
  if (authorBlocked) {
    return {
      kind: 'refused',
      sentence:
        'An admin of this server has blocked that message’s author from having Herald speak for them here.',
    };
  }
  const name = spokenName ?? message.member?.displayName ?? author.displayName;
  // One message read on request: its author is always named when the server has auto-read name authors.
  const text = spokenTextOf(message, toSpeakOf(message), {
    settings,
    dictionary,
    authorPrefix: settings.announceAuthor ? name : undefined,
  });
  if (text === '') return { kind: 'refused', sentence: 'There is nothing in that message to read aloud.' };
  const choice = await resolveSpeaker(deps, guildId, author.id);
  if (choice.kind !== 'chosen') {
    return { kind: 'refused', sentence: 'The speech service lists no voices right now.' };
  }
  return { kind: 'ready', text, speaker: choice.speaker, characters: countCharacters(text) };
}
