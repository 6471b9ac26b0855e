import type { AutocompleteInteraction } from 'discord.js';
import type { Deps } from '../src/command.ts';
import { rankSpeakers } from '../src/speakers.ts';
import type { EnqueueOutcome, JoinOutcome } from '../src/voice/manager.ts';

/** Autocomplete for any `speaker` option: prefix matches, then substring matches, 25 at most. */
export async function speakerAutocomplete(
  interaction: AutocompleteInteraction<'cached'>,
  deps: Deps,
): Promise<void> {
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
      return 'You are in this server’s AFK channel, where nobody can speak. Join another voice channel, then try again.';
  }
}

/** The sentence for an utterance refused because a queue is full. */
export function describeQueueFull(outcome: Extract<EnqueueOutcome, { kind: 'queue-full' }>): string {
  return outcome.scope === 'member'
    ? `You already have ${outcome.limit} messages waiting to be spoken here; send more once some have been said.`
    : `This server’s speech queue is full (${outcome.limit} messages); try again once some have been said, or use /stop to clear it.`;
}
