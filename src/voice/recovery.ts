import type { Client } from 'discord.js';
import type { Logger } from '../log.ts';
import type { PersistedSession, VoiceStateStore } from '../storage/voice-state.ts';
import type { Speaker } from '../tts/index.ts';
import type { SessionSnapshot, VoiceManager } from './manager.ts';

/** A session offered to the store, and its JSON (both null: the session is to be removed). */
interface Offered {
  readonly session: PersistedSession | null;
  readonly json: string | null;
}

/**
 * Keeps each server's voice session in the store as it changes, so a restart can finish it. The sessions offered
 * while a write is under way are written together by the next one, in one transaction (a group commit): in a rush
 * every utterance changes its server's session twice (queued, then said), and 1,000 members asking at once were
 * 2,000 transactions of one row each, every one taking the database's write lock the budget's reservations wait
 * for. Writes keep the order they were offered in; a failed write is logged, never thrown at the voice session. A
 * snapshot that would write what the store already holds (a session that changed in ways a restart does not need,
 * such as an utterance moving from waiting to playing) is not written again. Nor is one that a newer snapshot of
 * its server replaced before its write began: the write takes the newest.
 */
export function persistSnapshots(
  store: VoiceStateStore,
  logger: Logger,
): (guildId: string, snapshot: SessionSnapshot) => void {
  // Per server, the session last handed to the store (as JSON): written, or being written.
  const written = new Map<string, string>();
  // Per server, the newest session offered since the last write began (null: remove it).
  const next = new Map<string, Offered>();
  let writing = false;
  const write = async (): Promise<void> => {
    try {
      while (next.size > 0) {
        const batch = [...next].map(([guildId, offered]) => ({ guildId, ...offered }));
        next.clear();
        try {
          await store.saveAll(batch);
        } catch (error) {
          // Not in the store after all: the same snapshot is written again the next time it is offered.
          for (const { guildId, json } of batch) {
            if (json !== null && written.get(guildId) === json) written.delete(guildId);
          }
          logger.warn('could not save voice sessions', {
            servers: batch.length,
            guilds: batch
              .slice(0, 5)
              .map(({ guildId }) => guildId)
              .join(','),
            err: error,
          });
        }
      }
    } finally {
      writing = false;
    }
  };
  return (guildId, snapshot) => {
    const session = snapshot === null ? null : persisted(guildId, snapshot);
    const json = session === null ? null : JSON.stringify(session);
    if (json !== null && written.get(guildId) === json) return;
    if (json === null) written.delete(guildId);
    else written.set(guildId, json);
    next.set(guildId, { session, json });
    if (writing) return;
    writing = true;
    // At the end of this task: what the task offers goes in one write, and what is offered while it is written in the
    // next (the database's writes queue behind each other, so under load the batches grow by themselves).
    queueMicrotask(() => void write());
  };
}

function persisted(guildId: string, snapshot: NonNullable<SessionSnapshot>): PersistedSession {
  return {
    guildId,
    channelId: snapshot.channelId,
    announceChannelId: snapshot.announceChannelId,
    queue: snapshot.queue.map((request) => ({
      text: request.text,
      speakerId: request.speaker.id,
      speakerName: request.speaker.name,
      userId: request.requestedBy.id,
      userName: request.requestedBy.name,
      key: request.key ?? null,
    })),
  };
}

/** Options of {@link recoverSessions}. */
export interface RecoveryOptions {
  readonly store: VoiceStateStore;
  readonly voice: VoiceManager;
  /** A logged-in client whose guild caches are filled (after `ClientReady`). */
  readonly client: Client<true>;
  /** The voices offered now; a saved voice no longer listed is still tried by its id. */
  readonly speakers: () => Promise<readonly Speaker[]>;
  /**
   * True for a server on this process's shards. The others' saved sessions belong to the processes running their
   * shards: neither resumed nor forgotten here. Default: every server.
   */
  readonly owns?: (guildId: string) => boolean;
  readonly logger: Logger;
}

/** What {@link recoverSessions} did. */
export interface RecoveryReport {
  readonly rejoined: number;
  readonly utterances: number;
  /** Sessions not resumed: the server, the channel or its listeners are gone. */
  readonly dropped: number;
}

/**
 * After a restart (a deploy, a crash, a shard restart): rejoins each voice channel Herald was in that still has
 * members, without a word about the interruption, and says what was still queued there, in order. Channels that
 * emptied (or vanished) are forgotten.
 */
export async function recoverSessions(options: RecoveryOptions): Promise<RecoveryReport> {
  const { store, voice, client, logger } = options;
  const owns = options.owns ?? (() => true);
  const saved = (await store.load()).filter((session) => owns(session.guildId));
  if (saved.length === 0) return { rejoined: 0, utterances: 0, dropped: 0 };
  let speakers: readonly Speaker[] = [];
  try {
    speakers = await options.speakers();
  } catch (error) {
    logger.warn('voices unavailable while resuming voice sessions; saved voices are tried by id', {
      err: error,
    });
  }
  let rejoined = 0;
  let utterances = 0;
  let dropped = 0;
  for (const session of saved) {
    try {
      const resumed = resume(session);
      if (resumed === undefined) {
        dropped += 1;
        await store.remove(session.guildId);
      } else {
        rejoined += 1;
        utterances += resumed;
      }
    } catch (error) {
      dropped += 1;
      logger.error('could not resume a voice session', { guild: session.guildId, err: error });
    }
  }
  logger.info('voice sessions resumed after a restart', { rejoined, utterances, dropped });
  return { rejoined, utterances, dropped };

  function resume(session: PersistedSession): number | undefined {
    const guild = client.guilds.cache.get(session.guildId);
    const channel = guild?.channels.cache.get(session.channelId);
    if (!guild || !channel?.isVoiceBased()) return undefined;
    if (!channel.members.some((member) => !member.user.bot)) return undefined;
    const announce = session.announceChannelId
      ? guild.channels.cache.get(session.announceChannelId)
      : undefined;
    const outcome = voice.join(channel, announce?.isSendable() ? announce : undefined);
    if (outcome.kind !== 'joined' && outcome.kind !== 'already-here') {
      logger.warn('could not rejoin a voice channel after a restart', {
        guild: guild.id,
        outcome: outcome.kind,
      });
      return undefined;
    }
    let queued = 0;
    for (const item of session.queue) {
      const speaker = speakers.find((candidate) => candidate.id === item.speakerId) ?? {
        id: item.speakerId,
        name: item.speakerName,
        voiceKey: item.speakerId,
        gender: null,
        languages: null,
      };
      const result = outcome.session.enqueue({
        text: item.text,
        speaker,
        requestedBy: { id: item.userId, name: item.userName },
        ...(item.key === null ? {} : { key: item.key }),
        onFailure: (error) =>
          logger.warn('an utterance queued before the restart could not be spoken', {
            guild: guild.id,
            err: error,
          }),
      });
      if (result.kind !== 'queued') break;
      queued += 1;
    }
    return queued;
  }
}
