import { randomBytes } from 'node:crypto';
import type { Database, Migrations } from '../storage/database.ts';

/** One utterance served from the cache instead of being paid for. */
export interface CacheHit {
  readonly guildId: string;
  readonly userId: string;
  readonly characters: number;
  /**
   * What the service charged when the audio was generated; what this hit did not spend. Stored as whole
   * nano-dollars, so a sum of many hits never drifts.
   */
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

/**
 * The cache tables' migrations on each engine, applied by {@link createCacheStore}. Append only: a released
 * migration is never edited. Money is whole nano-dollars from version 2 on, as in the budget's tables.
 */
export const CACHE_MIGRATIONS: Migrations = {
  sqlite: [
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
    // SQLite cannot change a column's type: the ledger is copied into a table with an integer column.
    `CREATE TABLE audio_cache_ledger_v2 (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       guild_id TEXT NOT NULL,
       user_id TEXT NOT NULL,
       characters INTEGER NOT NULL,
       saved_nanos INTEGER NOT NULL,
       at INTEGER NOT NULL,
       day TEXT NOT NULL
     );
     INSERT INTO audio_cache_ledger_v2
       SELECT id, guild_id, user_id, characters, CAST(ROUND(saved_usd * 1e9) AS INTEGER), at, day
       FROM audio_cache_ledger;
     DROP TABLE audio_cache_ledger;
     ALTER TABLE audio_cache_ledger_v2 RENAME TO audio_cache_ledger;
     CREATE INDEX audio_cache_ledger_guild_day ON audio_cache_ledger (guild_id, day);`,
  ],
  postgres: [
    `CREATE TABLE audio_cache_installation (
       id INTEGER PRIMARY KEY CHECK (id = 1),
       secret TEXT NOT NULL
     );
     CREATE TABLE audio_cache_guild (
       guild_id TEXT PRIMARY KEY,
       enabled INTEGER NOT NULL
     );
     CREATE TABLE audio_cache_ledger (
       id BIGSERIAL PRIMARY KEY,
       guild_id TEXT NOT NULL,
       user_id TEXT NOT NULL,
       characters INTEGER NOT NULL,
       saved_usd DOUBLE PRECISION NOT NULL,
       at BIGINT NOT NULL,
       day TEXT NOT NULL
     );
     CREATE INDEX audio_cache_ledger_guild_day ON audio_cache_ledger (guild_id, day);`,
    // NUMERIC's ROUND breaks ties away from zero, as Math.round does for savings (never negative); a double's
    // ROUND may break them to even.
    `ALTER TABLE audio_cache_ledger
       ALTER COLUMN saved_usd TYPE BIGINT USING ROUND((saved_usd * 1e9)::NUMERIC)::BIGINT;
     ALTER TABLE audio_cache_ledger RENAME COLUMN saved_usd TO saved_nanos;`,
  ],
};

const NANOS = 1e9;

/** The UTC day of a time in ms, as `YYYY-MM-DD`. */
function utcDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** A {@link CacheStore} on Herald's database, shared with the other stores; applies its migrations first. */
export async function createCacheStore(db: Database): Promise<CacheStore> {
  await db.migrate('cache', CACHE_MIGRATIONS);
  const sum =
    'COUNT(*) AS hits, COALESCE(SUM(characters), 0) AS characters, COALESCE(SUM(saved_nanos), 0) AS nanos';
  const toSavings = (row: unknown): CacheSavings => {
    const r = row as { hits: number; characters: number; nanos: number };
    return { hits: Number(r.hits), characters: Number(r.characters), usd: Number(r.nanos) / NANOS };
  };

  return {
    async secret() {
      await db.run(
        'INSERT INTO audio_cache_installation (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING',
        [randomBytes(32).toString('hex')],
      );
      const row = await db.get<{ secret: string }>(
        'SELECT secret FROM audio_cache_installation WHERE id = 1',
      );
      return Buffer.from(row?.secret ?? '', 'hex');
    },
    async guildEnabled(guildId) {
      const row = await db.get<{ enabled: number }>(
        'SELECT enabled FROM audio_cache_guild WHERE guild_id = $1',
        [guildId],
      );
      return row === undefined || row.enabled !== 0;
    },
    async setGuildEnabled(guildId, enabled) {
      await db.run(
        `INSERT INTO audio_cache_guild (guild_id, enabled) VALUES ($1, $2)
         ON CONFLICT (guild_id) DO UPDATE SET enabled = excluded.enabled`,
        [guildId, enabled ? 1 : 0],
      );
    },
    async recordHit(hit) {
      await db.run(
        'INSERT INTO audio_cache_ledger (guild_id, user_id, characters, saved_nanos, at, day) VALUES ($1, $2, $3, $4, $5, $6)',
        [hit.guildId, hit.userId, hit.characters, Math.round(hit.savedUsd * NANOS), hit.at, utcDay(hit.at)],
      );
    },
    async savings(guildId, day) {
      const [today, total] = await Promise.all([
        db.get(`SELECT ${sum} FROM audio_cache_ledger WHERE guild_id = $1 AND day = $2`, [guildId, day]),
        db.get(`SELECT ${sum} FROM audio_cache_ledger WHERE guild_id = $1`, [guildId]),
      ]);
      return { day: toSavings(today), total: toSavings(total) };
    },
  };
}
