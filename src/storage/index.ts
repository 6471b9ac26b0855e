/**
 * Settings storage. Commands and the domain see only {@link SettingsStore}; `createSettingsStore` writes it once
 * over a {@link Database} (SQLite or PostgreSQL, opened by `openDatabase`).
 */
import type { Database } from './database.ts';

export type { Database, Dialect, Migrations, Queryable, SqlValue } from './database.ts';
export { type DatabaseConfig, type OpenDatabaseOptions, openDatabase } from './open.ts';
export {
  DatabaseTimeoutError,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  isDatabaseUnavailable,
  UNREACHABLE_CODES,
} from './postgres/database.ts';

/** A server's settings; reads of a server never configured return {@link defaultGuildSettings}. */
export interface GuildSettings {
  readonly guildId: string;
  /** The speaker id admins chose for the server, or null for "not chosen". */
  readonly defaultSpeakerId: string | null;
}

/** The settings of a server nobody configured. */
export function defaultGuildSettings(guildId: string): GuildSettings {
  return { guildId, defaultSpeakerId: null };
}

/** Where Herald keeps what server admins and members configured. Every write is durable when it resolves. */
export interface SettingsStore {
  guild(guildId: string): Promise<GuildSettings>;
  setGuildSpeaker(guildId: string, speakerId: string | null): Promise<void>;
  /** The member's own voice in a server, or null. */
  memberSpeaker(guildId: string, userId: string): Promise<string | null>;
  setMemberSpeaker(guildId: string, userId: string, speakerId: string | null): Promise<void>;
}

/**
 * The settings tables' migrations. Append only: a released migration is never edited. Other stores (budget,
 * auto-read) keep their own lists under their own names.
 */
export const SETTINGS_MIGRATIONS = {
  sqlite: [
    `CREATE TABLE guild_settings (
       guild_id TEXT PRIMARY KEY,
       default_speaker_id TEXT,
       updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
     );
     CREATE TABLE member_settings (
       guild_id TEXT NOT NULL,
       user_id TEXT NOT NULL,
       speaker_id TEXT,
       updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
       PRIMARY KEY (guild_id, user_id)
     );`,
  ],
  postgres: [
    `CREATE TABLE guild_settings (
       guild_id TEXT PRIMARY KEY,
       default_speaker_id TEXT,
       updated_at TEXT NOT NULL
     );
     CREATE TABLE member_settings (
       guild_id TEXT NOT NULL,
       user_id TEXT NOT NULL,
       speaker_id TEXT,
       updated_at TEXT NOT NULL,
       PRIMARY KEY (guild_id, user_id)
     );`,
  ],
};

/** A {@link SettingsStore} on an open database; applies the settings migrations first. */
export async function createSettingsStore(db: Database): Promise<SettingsStore> {
  await db.migrate('settings', SETTINGS_MIGRATIONS);
  const stamp = (): string => new Date().toISOString();
  return {
    async guild(guildId): Promise<GuildSettings> {
      const row = await db.get<{ default_speaker_id: string | null }>(
        'SELECT default_speaker_id FROM guild_settings WHERE guild_id = $1',
        [guildId],
      );
      return row ? { guildId, defaultSpeakerId: row.default_speaker_id } : defaultGuildSettings(guildId);
    },
    async setGuildSpeaker(guildId, speakerId) {
      await db.run(
        `INSERT INTO guild_settings (guild_id, default_speaker_id, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (guild_id) DO UPDATE SET default_speaker_id = excluded.default_speaker_id,
           updated_at = excluded.updated_at`,
        [guildId, speakerId, stamp()],
      );
    },
    async memberSpeaker(guildId, userId) {
      const row = await db.get<{ speaker_id: string | null }>(
        'SELECT speaker_id FROM member_settings WHERE guild_id = $1 AND user_id = $2',
        [guildId, userId],
      );
      return row?.speaker_id ?? null;
    },
    async setMemberSpeaker(guildId, userId, speakerId) {
      await db.run(
        `INSERT INTO member_settings (guild_id, user_id, speaker_id, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (guild_id, user_id) DO UPDATE SET speaker_id = excluded.speaker_id,
           updated_at = excluded.updated_at`,
        [guildId, userId, speakerId, stamp()],
      );
    },
  };
}
