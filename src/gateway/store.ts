import type { Database, Migrations } from '../storage/database.ts';

/** One shard's gateway session as Discord gave it (READY), with the last sequence Herald received. */
export interface GatewaySession {
  readonly shardId: number;
  /** The shard count the session was identified with: a session of another count is never resumed. */
  readonly shardCount: number;
  readonly sessionId: string;
  readonly sequence: number;
  /** READY's `resume_gateway_url`: where a RESUME must go. */
  readonly resumeUrl: string;
}

/** A stored session, when it was written, and the cache snapshot a planned stop left with it (or null). */
export interface StoredGatewaySession extends GatewaySession {
  /** Epoch milliseconds of the last write. */
  readonly updatedAt: number;
  /** JSON of the shard's cache at a planned stop; null while the session runs and after a crash. */
  readonly cache: string | null;
}

/**
 * Why a stored session must not be RESUMEd (IDENTIFY instead), or undefined when it may: it is of the shard count
 * the client runs, younger than `resumeWindowMs`, and a planned stop left its cache snapshot with it.
 */
export function whyNotResumable(
  stored: StoredGatewaySession,
  shardCount: number,
  ageMs: number,
  resumeWindowMs: number,
): string | undefined {
  if (stored.shardCount !== shardCount) return `it is of ${stored.shardCount} shards, not ${shardCount}`;
  if (ageMs > resumeWindowMs) return `it is ${Math.round(ageMs / 1000)} s old`;
  if (stored.cache === null) return 'the process before did not stop as planned';
  return undefined;
}

/** Each shard's gateway session in Herald's database, so that a restarted process can RESUME it. */
export interface GatewaySessionStore {
  /** The shard's stored session, or undefined. */
  load(shardId: number): Promise<StoredGatewaySession | undefined>;
  /** Writes the running session (a new one replaces another's row); any cache snapshot kept with it is dropped. */
  save(session: GatewaySession, at: number): Promise<void>;
  /**
   * A planned stop: writes the session with the shard's cache snapshot. Only over a row of the same session (or
   * none): a process that lost its shards to another Herald never overwrites that one's session.
   */
  saveAtStop(session: GatewaySession, cache: string, at: number): Promise<void>;
  /** The snapshot was used (or is unusable): a later crash must not restore it again. */
  dropCache(shardId: number): Promise<void>;
  /** Forgets the shard's session (Discord ended it). */
  remove(shardId: number): Promise<void>;
}

const TABLE = (bigint: string): string => `CREATE TABLE gateway_sessions (
     shard_id INTEGER PRIMARY KEY,
     shard_count INTEGER NOT NULL,
     session_id TEXT NOT NULL,
     sequence ${bigint} NOT NULL,
     resume_url TEXT NOT NULL,
     updated_at ${bigint} NOT NULL,
     cache TEXT
   );`;

/** Append only: a released migration is never edited. */
const GATEWAY_SESSION_MIGRATIONS: Migrations = { sqlite: [TABLE('INTEGER')], postgres: [TABLE('BIGINT')] };

interface Row {
  shard_id: number;
  shard_count: number;
  session_id: string;
  sequence: number;
  resume_url: string;
  updated_at: number;
  cache: string | null;
}

const UPSERT = `INSERT INTO gateway_sessions (shard_id, shard_count, session_id, sequence, resume_url, updated_at, cache)
  VALUES ($1, $2, $3, $4, $5, $6, $7)
  ON CONFLICT (shard_id) DO UPDATE SET shard_count = excluded.shard_count, session_id = excluded.session_id,
    sequence = excluded.sequence, resume_url = excluded.resume_url, updated_at = excluded.updated_at,
    cache = excluded.cache`;

/** A {@link GatewaySessionStore} in Herald's database (SQLite or PostgreSQL); applies its migration first. */
export async function createGatewaySessionStore(db: Database): Promise<GatewaySessionStore> {
  await db.migrate('gateway-sessions', GATEWAY_SESSION_MIGRATIONS);
  const values = (s: GatewaySession, at: number, cache: string | null) => [
    s.shardId,
    s.shardCount,
    s.sessionId,
    s.sequence,
    s.resumeUrl,
    at,
    cache,
  ];
  return {
    async load(shardId) {
      const row = await db.get<Row>(
        `SELECT shard_id, shard_count, session_id, sequence, resume_url, updated_at, cache
         FROM gateway_sessions WHERE shard_id = $1`,
        [shardId],
      );
      if (!row) return undefined;
      return {
        shardId: Number(row.shard_id),
        shardCount: Number(row.shard_count),
        sessionId: row.session_id,
        sequence: Number(row.sequence),
        resumeUrl: row.resume_url,
        updatedAt: Number(row.updated_at),
        cache: row.cache,
      };
    },
    async save(session, at) {
      await db.run(UPSERT, values(session, at, null));
    },
    async saveAtStop(session, cache, at) {
      await db.run(
        `${UPSERT} WHERE gateway_sessions.session_id = excluded.session_id`,
        values(session, at, cache),
      );
    },
    async dropCache(shardId) {
      await db.run('UPDATE gateway_sessions SET cache = NULL WHERE shard_id = $1', [shardId]);
    },
    async remove(shardId) {
      await db.run('DELETE FROM gateway_sessions WHERE shard_id = $1', [shardId]);
    },
  };
}
