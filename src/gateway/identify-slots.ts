/**
 * Identify slots in the shared database. Discord lets a bot start one session (IDENTIFY) per bucket
 * (`shard_id % max_concurrency`) every 5 s, counted over every process and machine of the bot, and answers more with
 * a closed connection. One row per bucket says when its next IDENTIFY may go: a process takes the slot by moving that
 * time on by the window, in one transaction, on the database's clock (machines' clocks may disagree; the database's
 * is the one they share). Nothing is held after the claim, so a process that crashed holding a slot costs the others
 * the window at most.
 */
import type { Database, Migrations, Queryable } from '../storage/database.ts';

/** Discord's identify window (5 s), and a little more, so that an IDENTIFY sent a moment late keeps clear of the edge. */
export const IDENTIFY_WINDOW_MS = 5_500;

const IDENTIFY_SLOTS_TABLE = `CREATE TABLE identify_slots (
     bucket INTEGER PRIMARY KEY,
     next_at BIGINT NOT NULL,
     shard_id INTEGER NOT NULL,
     host TEXT NOT NULL,
     pid INTEGER NOT NULL
   );`;

/** Append only: a released migration is never edited. The same table on both engines. */
const IDENTIFY_SLOTS_MIGRATIONS: Migrations = {
  sqlite: [IDENTIFY_SLOTS_TABLE],
  postgres: [IDENTIFY_SLOTS_TABLE],
};

/** The database's clock in milliseconds since the epoch, per engine. */
const NOW_MS = {
  // clock_timestamp(), not now(): now() is the transaction's start, before the row lock was waited for.
  postgres: '(extract(epoch FROM clock_timestamp()) * 1000)::bigint',
  sqlite: "CAST(unixepoch('subsec') * 1000 AS INTEGER)",
} as const;

/** Who asks for a slot: the shard and its process, recorded so that a waiting process can say whom it waits for. */
export interface IdentifyClaimant {
  readonly shardId: number;
  readonly host: string;
  readonly pid: number;
}

/** The outcome of a claim. Times are the database's. */
export type IdentifySlot =
  | { readonly kind: 'claimed'; readonly at: number }
  | {
      readonly kind: 'wait';
      /** How long until the bucket's next slot (at most the window). */
      readonly waitMs: number;
      /** Who took the slot being waited out. */
      readonly last: IdentifyClaimant;
    };

/** The identify slots of one database. */
export interface IdentifySlots {
  /**
   * Takes `bucket`'s slot for `claimant` when its window has passed (the IDENTIFY may go now), else says how long
   * to wait. Creates the table on first use.
   * @throws when the database fails.
   */
  claim(bucket: number, claimant: IdentifyClaimant): Promise<IdentifySlot>;
}

interface SlotRow {
  next_at: number;
  shard_id: number;
  host: string;
  pid: number;
}

/** The identify slots kept in `db`, one IDENTIFY per bucket per `windowMs` (default {@link IDENTIFY_WINDOW_MS}). */
export function createIdentifySlots(
  db: Database,
  options: { readonly windowMs?: number } = {},
): IdentifySlots {
  const windowMs = options.windowMs ?? IDENTIFY_WINDOW_MS;
  // Migrated on the first claim, and again after a failed one: the client is built before the database answers.
  let migrated: Promise<void> | undefined;
  const migrate = (): Promise<void> => {
    migrated ??= db.migrate('identify-slots', IDENTIFY_SLOTS_MIGRATIONS).catch((error: unknown) => {
      migrated = undefined;
      throw error;
    });
    return migrated;
  };
  return {
    async claim(bucket, claimant) {
      await migrate();
      return db.transaction((tx) => claimIn(tx, bucket, claimant, windowMs));
    },
  };
}

async function claimIn(
  tx: Queryable,
  bucket: number,
  claimant: IdentifyClaimant,
  windowMs: number,
): Promise<IdentifySlot> {
  // A bucket nobody identified in yet is open; two processes inserting it at once insert it once.
  await tx.run(
    `INSERT INTO identify_slots (bucket, next_at, shard_id, host, pid) VALUES ($1, 0, -1, '', 0)
     ON CONFLICT (bucket) DO NOTHING`,
    [bucket],
  );
  const row = await tx.get<SlotRow>(
    `SELECT next_at, shard_id, host, pid FROM identify_slots WHERE bucket = $1${tx.forUpdate}`,
    [bucket],
  );
  // Read once the row is locked, so that the time waited for the lock counts.
  const clock = await tx.get<{ now: number }>(`SELECT ${NOW_MS[tx.dialect]} AS now`);
  if (!row || !clock) throw new Error(`The identify slot of bucket ${bucket} could not be read.`);
  const now = Number(clock.now);
  const nextAt = Number(row.next_at);
  // A slot further ahead than one window was not set by this rule (a clock set back): it does not hold anyone up.
  if (nextAt > now && nextAt - now <= windowMs) {
    return {
      kind: 'wait',
      waitMs: nextAt - now,
      last: { shardId: Number(row.shard_id), host: row.host, pid: Number(row.pid) },
    };
  }
  await tx.run(
    'UPDATE identify_slots SET next_at = $2, shard_id = $3, host = $4, pid = $5 WHERE bucket = $1',
    [bucket, now + windowMs, claimant.shardId, claimant.host, claimant.pid],
  );
  return { kind: 'claimed', at: now };
}
