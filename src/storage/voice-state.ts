import type { Database, Migrations, Queryable } from './database.ts';

/** An utterance that was queued and not yet heard, as kept across a restart. */
export interface PersistedUtterance {
  readonly text: string;
  readonly speakerId: string;
  readonly speakerName: string;
  readonly userId: string;
  readonly userName: string;
  /** The source's key (an auto-read message id), so a deletion after the restart still withdraws it. */
  readonly key: string | null;
}

/** Where Herald was in voice in one server, and what it still had to say there. */
export interface PersistedSession {
  readonly guildId: string;
  readonly channelId: string;
  /** Where the session reports why it left. */
  readonly announceChannelId: string | null;
  readonly queue: readonly PersistedUtterance[];
}

/** One server's session as it now stands: saved whole, or (null) forgotten. */
export interface VoiceStateChange {
  readonly guildId: string;
  readonly session: PersistedSession | null;
}

/**
 * Herald's voice sessions as they stand, kept so a restart (or a crash) can rejoin and finish what was queued.
 * Every write is durable when it resolves.
 */
export interface VoiceStateStore {
  /**
   * Applies the changes of many servers (at most one each) in one transaction, all of them or none: each session
   * replaced whole (its channel and its queue, in order), or forgotten.
   */
  saveAll(changes: readonly VoiceStateChange[]): Promise<void>;
  /** Forgets a server's session (Herald left on purpose, or the channel emptied). */
  remove(guildId: string): Promise<void>;
  /** Every session saved, queues in order. */
  load(): Promise<PersistedSession[]>;
}

const VOICE_STATE_TABLE = `CREATE TABLE voice_sessions (
     guild_id TEXT PRIMARY KEY,
     channel_id TEXT NOT NULL,
     announce_channel_id TEXT,
     queue TEXT NOT NULL
   );`;

/** Append only: a released migration is never edited. The same table on both engines. */
const VOICE_STATE_MIGRATIONS: Migrations = { sqlite: [VOICE_STATE_TABLE], postgres: [VOICE_STATE_TABLE] };

/** A {@link VoiceStateStore} in Herald's database; the queue is one JSON column, rewritten whole. */
export async function createVoiceStateStore(db: Database): Promise<VoiceStateStore> {
  await db.migrate('voice-state', VOICE_STATE_MIGRATIONS);
  const save = (tx: Queryable, session: PersistedSession) =>
    tx.run(
      `INSERT INTO voice_sessions (guild_id, channel_id, announce_channel_id, queue) VALUES ($1, $2, $3, $4)
       ON CONFLICT (guild_id) DO UPDATE SET channel_id = excluded.channel_id,
         announce_channel_id = excluded.announce_channel_id, queue = excluded.queue`,
      [session.guildId, session.channelId, session.announceChannelId, JSON.stringify(session.queue)],
    );
  const remove = (tx: Queryable, guildId: string) =>
    tx.run('DELETE FROM voice_sessions WHERE guild_id = $1', [guildId]);
  return {
    async remove(guildId) {
      await remove(db, guildId);
    },
    async saveAll(changes) {
      if (changes.length === 0) return;
      await db.transaction(async (tx) => {
        for (const { guildId, session } of changes) {
          await (session === null ? remove(tx, guildId) : save(tx, session));
        }
      });
    },
    async load() {
      const rows = await db.all<{
        guild_id: string;
        channel_id: string;
        announce_channel_id: string | null;
        queue: string;
      }>('SELECT guild_id, channel_id, announce_channel_id, queue FROM voice_sessions');
      return rows.map((row) => ({
        guildId: row.guild_id,
        channelId: row.channel_id,
        announceChannelId: row.announce_channel_id,
        queue: parseQueue(row.queue),
      }));
    },
  };
}

function parseQueue(text: string): PersistedUtterance[] {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? (value as PersistedUtterance[]) : [];
  } catch {
    // A damaged row loses its queue, not the session (nor Herald's start).
    return [];
  }
}
