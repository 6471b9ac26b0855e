import type { AutocompleteInteraction, CommandInteraction, VoiceBasedChannel } from 'discord.js';
import type { Deps } from '../src/discord/command.ts';
import { formatCount } from '../src/discord/member-facing.ts';
import { describeFailure, followUpLater } from '../src/discord/replies.ts';
import { rankSpeakers } from '../src/members/speakers.ts';
import type { Speaker } from '../src/tts/index.ts';
import type { EnqueueOutcome, JoinOutcome } from '../src/voice/manager.ts';

/** The sentence for a member an admin blocked (`/block`). */
export const BLOCKED = 'An admin of this server has blocked you from having Herald speak for you here.';

/** What {@link sayInVoice} says, where, and how it answers. */
export interface VoiceUtterance {
  readonly channel: VoiceBasedChannel;
  readonly text: string;
  readonly speaker: Speaker;
  /** Code points of the text, for the answer and its cost estimate. */
  readonly characters: number;
  /** The interaction's one ephemeral answer. */
  readonly reply: (content: string) => Promise<void>;
  /** A key to withdraw it by (a message id: its deletion withdraws it, as auto-read's). */
  readonly key?: string;
}

/**
 * Joins the member's voice channel (or stays where Herald is) and queues the utterance as the caller's (they pay
 * in the rate limits); answers with where it stands in the queue and what it costs, and follows up ephemerally if
 * it later fails.
 */
export async function sayInVoice(
  interaction: CommandInteraction<'cached'>,
  deps: Deps,
  u: VoiceUtterance,
): Promise<void> {
  const { reply, speaker } = u;
  const outcome = deps.voice.join(u.channel, interaction.channel ?? undefined);
  if (outcome.kind !== 'joined' && outcome.kind !== 'already-here') {
    return reply(describeJoinRefusal(outcome));
  }
  let acknowledged: Promise<void> = new Promise(() => {});
  const queued = outcome.session.enqueue({
    text: u.text,
    speaker,
    requestedBy: { id: interaction.user.id, name: interaction.member.displayName },
    ...(u.key === undefined ? {} : { key: u.key }),
    onFailure: (error) => {
      const message = `I could not say “${preview(u.text)}”: ${describeFailure(error, deps.logger)}`;
      // A failure can come back before the reply below is sent; a follow-up needs that reply first.
      acknowledged
        .then(() => followUpLater(interaction, message, deps.logger))
        .catch((followUpError: unknown) =>
          deps.logger.warn('could not report a failed utterance', { err: followUpError }),
        );
    },
  });
  if (queued.kind === 'queue-full') return reply(describeQueueFull(queued));
  const cost = deps.estimateCostUsd(u.characters);
  // A join held back by Discord's gateway rate or a burst of joins: say how long, rather than "now" and a
  // failure later.
  const joinWaitS = Math.ceil(outcome.session.joinWaitMs() / 1000);
  const parts = [
    joinWaitS > 0
      ? `Joining your channel, about ${joinWaitS} s (Discord paces joins), then speaking as ${speaker.name}`
      : queued.ahead === 0
        ? `Speaking now as ${speaker.name}`
        : `Queued at position ${queued.ahead + 1} as ${speaker.name}`,
    `${formatCount(u.characters)} characters`,
    ...(cost === undefined ? [] : [`about $${cost.toFixed(4)}`]),
  ];
  acknowledged = reply(`${parts.join(' · ')}.`);
  return acknowledged;
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 60 ? `${flat.slice(0, 57)}…` : flat;
}

/** Autocomplete for any `speaker` option: prefix matches, then substring matches, 25 at most. */
export async function speakerAutocomplete(interaction: AutocompleteInteraction, deps: Deps): Promise<void> {
  const query = String(interaction.options.getFocused());
  let speakers: Awaited<ReturnType<Deps['tts']['speakers']>> = [];
  try {
    speakers = await deps.tts.speakers();
  } catch (error) {
    // Autocomplete has no way to show an error; an empty list is the honest answer.
    deps.logger.warn('speakers unavailable for autocomplete', { err: error });
  }
  await interaction.respond(
    rankSpeakers(speakers, query).map((speaker) => ({
      // Choice names are limited to 100 characters.
      name: `${speaker.name}${speaker.gender ? ` (${speaker.gender})` : ''}`.slice(0, 100),
      value: speaker.id,
    })),
  );
}

/** The sentence for a join Herald refused. */
export function describeJoinRefusal(
  outcome: Exclude<JoinOutcome, { kind: 'joined' } | { kind: 'already-here' }>,
): string {
  switch (outcome.kind) {
    case 'in-other-channel':
      return `I am already speaking in <#${outcome.channelId}>. Join me there, or use /leave first.`;
    case 'missing-permission':
      return `I can’t join your voice channel: I am missing the ${outcome.permission} permission there.`;
    case 'channel-full':
      return 'Your voice channel is full, so I can’t join it.';
    case 'afk-channel':
      return 'You are in this server’s AFK channel, where nobody speaks, so I won’t join it. Join another voice channel and ask again.';
  }
}

/** The sentence for an utterance refused because a queue is full. */
export function describeQueueFull(outcome: Extract<EnqueueOutcome, { kind: 'queue-full' }>): string {
  return outcome.scope === 'member'
    ? `You already have ${outcome.limit} messages waiting to be spoken here; send more once some have been said.`
    : `This server’s speech queue is full (${outcome.limit} messages); try again once some have been said, or use /stop to clear it.`;
}
