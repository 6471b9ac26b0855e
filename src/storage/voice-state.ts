import type { DatabaseSync } from 'node:sqlite';
import { migrate } from './sqlite.ts';

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

/**
 * Herald's voice sessions as they stand, kept so a restart (or a crash) can rejoin and finish what was queued.
 * Every write is durable when it resolves.
 */
export interface VoiceStateStore {
  /** Replaces a server's session (its channel and its whole queue, in order). */
  save(session: PersistedSession): Promise<void>;
  /** Forgets a server's session (Herald left on purpose, or the channel emptied). */
  remove(guildId: string): Promise<void>;
  /** Every session saved, queues in order. */
  load(): Promise<PersistedSession[]>;
}

const VOICE_STATE_MIGRATIONS: readonly string[] = [
  `CREATE TABLE voice_sessions (
     guild_id TEXT PRIMARY KEY,
     channel_id TEXT NOT NULL,
     announce_channel_id TEXT,
     queue TEXT NOT NULL
   );`,
];

/** A {@link VoiceStateStore} in the SQLite database; the queue is one JSON column, rewritten whole. */
export function createSqliteVoiceStateStore(db: DatabaseSync): VoiceStateStore {
  migrate(db, 'voice-state', VOICE_STATE_MIGRATIONS);
  const upsert = db.prepare(
    `INSERT INTO voice_sessions (guild_id, channel_id, announce_channel_id, queue) VALUES (?, ?, ?, ?)
     ON CONFLICT (guild_id) DO UPDATE SET channel_id = excluded.channel_id,
       announce_channel_id = excluded.announce_channel_id, queue = excluded.queue`,
  );
  const remove = db.prepare('DELETE FROM voice_sessions WHERE guild_id = ?');
  const all = db.prepare('SELECT guild_id, channel_id, announce_channel_id, queue FROM voice_sessions');
  return {
    async save(session) {
      upsert.run(
        session.guildId,
        session.channelId,
        session.announceChannelId,
        JSON.stringify(session.queue),
      );
    },
    async remove(guildId) {
      remove.run(guildId);
    },
    async load() {
      const rows = all.all() as {
        guild_id: string;
        channel_id: string;
        announce_channel_id: string | null;
        queue: string;
      }[];
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
