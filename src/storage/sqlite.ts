import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { defaultGuildSettings, type GuildSettings, type SettingsStore } from './index.ts';

/**
 * Schema migrations, applied in order; `PRAGMA user_version` records how many ran. Append only: a released
 * migration is never edited.
 */
const MIGRATIONS: readonly string[] = [
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

/** Opens (creating folders and schema as needed) the SQLite database at `path`, or ':memory:'. */
export function openSqlite(path: string): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  // WAL keeps readers off the writer's back; synchronous=FULL makes each committed write survive a crash.
  db.exec(
    'PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;',
  );
  migrate(db);
  return db;
}

/** Applies the migrations this database has not seen yet, each in its own transaction. */
export function migrate(db: DatabaseSync): void {
  const row = db.prepare('PRAGMA user_version').get() as { user_version: number } | undefined;
  const current = row?.user_version ?? 0;
  if (current > MIGRATIONS.length) {
    throw new Error(`The database schema (version ${current}) is newer than this Herald understands.`);
  }
  for (let version = current; version < MIGRATIONS.length; version++) {
    db.exec('BEGIN');
    try {
      db.exec(MIGRATIONS[version] ?? '');
      db.exec(`PRAGMA user_version = ${version + 1}`);
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }
}

/** A {@link SettingsStore} on a SQLite database opened with {@link openSqlite}. */
export function createSqliteSettingsStore(db: DatabaseSync): SettingsStore {
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
