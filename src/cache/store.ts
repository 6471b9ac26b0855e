import { randomBytes } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import { migrate } from '../storage/sqlite.ts';

/** One utterance served from the cache instead of being paid for. */
export interface CacheHit {
  readonly guildId: string;
  readonly userId: string;
  readonly characters: number;
  /** What the service charged when the audio was generated; what this hit did not spend. */
  readonly savedUsd: number;
  /** Ms since the epoch. */
  readonly at: number;
}

/** Hits and what they did not spend. */
export interface CacheSavings {
  readonly hits: number;
  readonly characters: number;
  readonly usd: number;
}

/**
 * The cache's rows in the database: the installation's key secret, each server's choice, and the ledger of hits.
 * Asynchronous so a PostgreSQL store can stand behind it; SQL kept to what both databases accept.
 */
export interface CacheStore {
  /** The per-installation HMAC secret, created on first use and never shown anywhere. */
  secret(): Promise<Buffer>;
  /** False when the server turned caching of its members' speech off; true by default. */
  guildEnabled(guildId: string): Promise<boolean>;
  setGuildEnabled(guildId: string, enabled: boolean): Promise<void>;
  recordHit(hit: CacheHit): Promise<void>;
  /** The server's savings on a UTC day (`YYYY-MM-DD`) and since the start. */
  savings(
    guildId: string,
    day: string,
  ): Promise<{ readonly day: CacheSavings; readonly total: CacheSavings }>;
}

/** Append only: a released migration is never edited. */
const CACHE_MIGRATIONS: readonly string[] = [
  `CREATE TABLE audio_cache_installation (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     secret TEXT NOT NULL
   );
   CREATE TABLE audio_cache_guild (
     guild_id TEXT PRIMARY KEY,
     enabled INTEGER NOT NULL
   );
   CREATE TABLE audio_cache_ledger (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     characters INTEGER NOT NULL,
     saved_usd REAL NOT NULL,
     at INTEGER NOT NULL,
     day TEXT NOT NULL
   );
   CREATE INDEX audio_cache_ledger_guild_day ON audio_cache_ledger (guild_id, day);`,
];

/** The UTC day of a time in ms, as `YYYY-MM-DD`. */
function utcDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** A {@link CacheStore} on a database from `openSqlite`, shared with the other stores. */
export function createSqliteCacheStore(db: DatabaseSync): CacheStore {
  migrate(db, 'cache', CACHE_MIGRATIONS);
  const insertSecret = db.prepare(
    'INSERT INTO audio_cache_installation (id, secret) VALUES (1, ?) ON CONFLICT (id) DO NOTHING',
  );
  const selectSecret = db.prepare('SELECT secret FROM audio_cache_installation WHERE id = 1');
  const selectGuild = db.prepare('SELECT enabled FROM audio_cache_guild WHERE guild_id = ?');
  const upsertGuild = db.prepare(
    `INSERT INTO audio_cache_guild (guild_id, enabled) VALUES (?, ?)
     ON CONFLICT (guild_id) DO UPDATE SET enabled = excluded.enabled`,
  );
  const insertHit = db.prepare(
    'INSERT INTO audio_cache_ledger (guild_id, user_id, characters, saved_usd, at, day) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const sum =
    'COUNT(*) AS hits, COALESCE(SUM(characters), 0) AS characters, COALESCE(SUM(saved_usd), 0) AS usd';
  const selectDay = db.prepare(`SELECT ${sum} FROM audio_cache_ledger WHERE guild_id = ? AND day = ?`);
  const selectTotal = db.prepare(`SELECT ${sum} FROM audio_cache_ledger WHERE guild_id = ?`);
  const toSavings = (row: unknown): CacheSavings => {
    const r = row as { hits: number; characters: number; usd: number };
    return { hits: r.hits, characters: r.characters, usd: r.usd };
  };

  return {
    async secret() {
      insertSecret.run(randomBytes(32).toString('hex'));
      const row = selectSecret.get() as { secret: string };
      return Buffer.from(row.secret, 'hex');
    },
    async guildEnabled(guildId) {
      const row = selectGuild.get(guildId) as { enabled: number } | undefined;
      return row === undefined || row.enabled !== 0;
    },
    async setGuildEnabled(guildId, enabled) {
      upsertGuild.run(guildId, enabled ? 1 : 0);
    },
    async recordHit(hit) {
      insertHit.run(hit.guildId, hit.userId, hit.characters, hit.savedUsd, hit.at, utcDay(hit.at));
    },
    async savings(guildId, day) {
      return { day: toSavings(selectDay.get(guildId, day)), total: toSavings(selectTotal.get(guildId)) };
    },
  };
}
