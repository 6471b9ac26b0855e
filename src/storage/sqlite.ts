import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { defaultGuildSettings, type GuildSettings, type SettingsStore } from './index.ts';

/**
 * The settings tables' migrations, applied in order by {@link migrate}. Append only: a released migration is never
 * edited. Other stores (budget, auto-read) keep their own list under their own name.
 */
export const SETTINGS_MIGRATIONS: readonly string[] = [
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
];

/** Opens (creating folders as needed) the SQLite database at `path`, or ':memory:'. */
export function openSqlite(path: string): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  // WAL keeps readers off the writer's back. synchronous=NORMAL: a commit is written to the WAL before it returns
  // (so it survives `kill -9` of Herald) but not fsync'd, which FULL did on the event loop for every ledger row
  // and stalled every playing stream; only an OS crash or power loss can lose the last commits.
  db.exec(
    'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;',
  );
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (component TEXT PRIMARY KEY, version INTEGER NOT NULL)',
  );
  return db;
}

/**
 * Brings `component`'s tables up to date: applies the migrations it has not seen, each in one transaction with
 * the version bump, so a crash leaves either the old or the new schema.
 * @throws when the database was written by a newer Herald (more migrations than this code knows).
 */
export function migrate(db: DatabaseSync, component: string, migrations: readonly string[]): void {
  const row = db.prepare('SELECT version FROM schema_migrations WHERE component = ?').get(component) as
    | { version: number }
    | undefined;
  const current = row?.version ?? 0;
  if (current > migrations.length) {
    throw new Error(
      `The ${component} tables (schema version ${current}) are newer than this Herald understands; upgrade Herald.`,
    );
  }
  const record = db.prepare(
    'INSERT INTO schema_migrations (component, version) VALUES (?, ?) ON CONFLICT (component) DO UPDATE SET version = excluded.version',
  );
  for (let version = current; version < migrations.length; version++) {
    db.exec('BEGIN');
    try {
      db.exec(migrations[version] ?? '');
      record.run(component, version + 1);
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }
}

/** A {@link SettingsStore} on a SQLite database opened with {@link openSqlite}. */
export function createSqliteSettingsStore(db: DatabaseSync): SettingsStore {
  migrate(db, 'settings', SETTINGS_MIGRATIONS);
  const selectGuild = db.prepare('SELECT default_speaker_id FROM guild_settings WHERE guild_id = ?');
  const upsertGuildSpeaker = db.prepare(
    `INSERT INTO guild_settings (guild_id, default_speaker_id) VALUES (?, ?)
     ON CONFLICT (guild_id) DO UPDATE SET default_speaker_id = excluded.default_speaker_id,
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
  );
  const selectMember = db.prepare(
    'SELECT speaker_id FROM member_settings WHERE guild_id = ? AND user_id = ?',
  );
  const upsertMember = db.prepare(
    `INSERT INTO member_settings (guild_id, user_id, speaker_id) VALUES (?, ?, ?)
     ON CONFLICT (guild_id, user_id) DO UPDATE SET speaker_id = excluded.speaker_id,
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
  );

  return {
    async guild(guildId): Promise<GuildSettings> {
      const row = selectGuild.get(guildId) as { default_speaker_id: string | null } | undefined;
      return row ? { guildId, defaultSpeakerId: row.default_speaker_id } : defaultGuildSettings(guildId);
    },
    async setGuildSpeaker(guildId, speakerId) {
      upsertGuildSpeaker.run(guildId, speakerId);
    },
    async memberSpeaker(guildId, userId) {
      const row = selectMember.get(guildId, userId) as { speaker_id: string | null } | undefined;
      return row?.speaker_id ?? null;
    },
    async setMemberSpeaker(guildId, userId, speakerId) {
      upsertMember.run(guildId, userId, speakerId);
    },
    close() {
      if (db.isOpen) db.close();
    },
  };
}
