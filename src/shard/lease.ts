/**
 * One Herald per shard. Two processes running the same shard (a second `npm start` on the same machine, a service
 * and a manual run, two machines whose SHARD_IDS overlap) would both receive its servers' messages, both read them
 * aloud and both pay, and the second would reconcile the first's generations in flight as uncertain. So each process
 * holds a lease on its shards in the shared database, renewed while it runs: a process whose shards another live
 * Herald holds waits (a standby) and starts when they are free.
 *
 * A lease is free when it has run out (its holder stopped renewing: another machine that died), when its holder on
 * this host is no longer alive (a restart after `kill -9`, at once), or when it is this process's own (the same host
 * and pid: a container restarted with the same pid). Shard counts must agree: a process of another count runs other
 * partitions of the same servers, so any live lease of another count stands in the way, as does every lease of a
 * process that runs every shard with `SHARD_COUNT=auto`.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import type { Database, Migrations } from '../storage/database.ts';
import { type ShardConfig, shardIdsOf } from './config.ts';

/** A lease not renewed for this long is free: how long another machine waits after its holder died. */
export const SHARD_LEASE_TTL_MS = 30_000;
/** How often a running process renews its leases. */
export const SHARD_LEASE_RENEW_MS = 10_000;
/** How often a waiting process looks again. */
export const SHARD_LEASE_POLL_MS = 2_000;

// The row of a process that runs every shard (SHARD_COUNT=auto), whose count is only known once logged in.
const EVERY_SHARD = -1;
const AUTO_COUNT = 0;

const SHARD_LEASE_TABLE = `CREATE TABLE shard_leases (
     shard_id INTEGER PRIMARY KEY,
     shard_count INTEGER NOT NULL,
     host TEXT NOT NULL,
     pid INTEGER NOT NULL,
     expires_at BIGINT NOT NULL
   );`;

/** Append only: a released migration is never edited. The same table on both engines. */
const SHARD_LEASE_MIGRATIONS: Migrations = { sqlite: [SHARD_LEASE_TABLE], postgres: [SHARD_LEASE_TABLE] };

/** A live lease held by another process, standing in the way of a claim. */
export interface ShardLeaseHolder {
  /** The shard, or `every` for a process with `SHARD_COUNT=auto`. */
  readonly shard: number | 'every';
  readonly count: number | 'auto';
  readonly host: string;
  readonly pid: number;
  /** When it runs out unless its holder renews it (ms since the epoch). */
  readonly expiresAt: number;
}

/** This process's leases. */
export interface ShardLeases {
  /**
   * Takes (or renews) the lease of every shard of this process, in one transaction, when no other live process
   * holds one that stands in the way; resolves to those that do (empty: claimed).
   */
  claim(): Promise<readonly ShardLeaseHolder[]>;
  /** Gives this process's leases up (a clean stop), so another process may start at once. */
  release(): Promise<void>;
}

/** Options of {@link createShardLeases}: what the process claims, and who it is. */
export interface ShardLeaseOptions extends ShardClaim {
  readonly host: string;
  readonly pid: number;
  readonly ttlMs?: number;
  readonly now?: () => number;
  /** Whether a process of this host is running (`process.kill(pid, 0)`). */
  readonly isAlive?: (pid: number) => boolean;
}

/** A row of the table as read (the doctor reads it too, with {@link SHARD_LEASES_SELECT}). */
export interface ShardLeaseRow {
  shard_id: number;
  shard_count: number;
  host: string;
  pid: number;
  expires_at: number;
}

/** Every lease, live or not. */
export const SHARD_LEASES_SELECT = 'SELECT shard_id, shard_count, host, pid, expires_at FROM shard_leases';

/** What a process claims: the bot's shard count (or `auto`) and the shards it runs (none listed with `auto`: every shard). */
export interface ShardClaim {
  readonly count: number | 'auto';
  readonly ids: readonly number[];
}

/** The claim of a process running `shards`. */
export function claimOf(shards: ShardConfig): ShardClaim {
  return shards.count === 'auto'
    ? { count: 'auto', ids: [] }
    : { count: shards.count, ids: shardIdsOf(shards, shards.count) };
}

/**
 * Whether `holder` still holds its lease at `at`, as seen from a process of `host`: not run out, and, when its holder
 * is on this host, still running.
 */
export function leaseIsLive(
  holder: ShardLeaseHolder,
  at: number,
  here: { readonly host: string; readonly isAlive?: (pid: number) => boolean },
): boolean {
  const isAlive = here.isAlive ?? processIsAlive;
  return holder.expiresAt > at && !(holder.host === here.host && !isAlive(holder.pid));
}

/** Whether a live `holder` keeps `claim` from starting: another count, `auto` on either side, or a shard of it. */
export function standsInTheWay(holder: ShardLeaseHolder, claim: ShardClaim): boolean {
  return (
    claim.count === 'auto' ||
    holder.count !== claim.count ||
    (holder.shard !== 'every' && claim.ids.includes(holder.shard))
  );
}

/** The leases of the shards `options` names, in `db` (its table created when missing). */
export async function createShardLeases(db: Database, options: ShardLeaseOptions): Promise<ShardLeases> {
  await db.migrate('shard-leases', SHARD_LEASE_MIGRATIONS);
  const ttlMs = options.ttlMs ?? SHARD_LEASE_TTL_MS;
  const now = options.now ?? Date.now;
  const isAlive = options.isAlive ?? processIsAlive;
  const { host, pid } = options;
  const claim: ShardClaim = {
    count: options.count,
    ids: options.count === 'auto' ? [] : [...new Set(options.ids)],
  };
  // The rows this process holds: one a shard, or the one of every shard.
  const count = claim.count === 'auto' ? AUTO_COUNT : claim.count;
  const ids = claim.count === 'auto' ? [EVERY_SHARD] : claim.ids;
  const mine = (holder: ShardLeaseHolder): boolean => holder.host === host && holder.pid === pid;

  return {
    claim: () =>
      db.transaction(async (tx) => {
        // PostgreSQL: one claim at a time (the rule reads every row); SQLite's transaction already holds the lock.
        if (tx.dialect === 'postgres') await tx.run('LOCK TABLE shard_leases IN SHARE ROW EXCLUSIVE MODE');
        const at = now();
        const rows = (await tx.all<ShardLeaseRow>(SHARD_LEASES_SELECT)).map(holderOf);
        const live = (holder: ShardLeaseHolder) => leaseIsLive(holder, at, { host, isAlive });
        const holders = rows.filter((row) => !mine(row) && live(row) && standsInTheWay(row, claim));
        if (holders.length > 0) return holders;
        // Leases nobody renews any more go, so that an old count or an old machine leaves nothing behind.
        for (const row of rows) {
          const id = row.shard === 'every' ? EVERY_SHARD : row.shard;
          if (!mine(row) && !live(row) && !ids.includes(id)) {
            await tx.run('DELETE FROM shard_leases WHERE shard_id = $1', [id]);
          }
        }
        for (const id of ids) {
          await tx.run(
            `INSERT INTO shard_leases (shard_id, shard_count, host, pid, expires_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (shard_id) DO UPDATE SET shard_count = excluded.shard_count, host = excluded.host,
               pid = excluded.pid, expires_at = excluded.expires_at`,
            [id, count, host, pid, at + ttlMs],
          );
        }
        return [];
      }),
    async release() {
      await db.run('DELETE FROM shard_leases WHERE host = $1 AND pid = $2', [host, pid]);
    },
  };
}

/**
 * Resolves once this process holds its shards' leases, waiting while another live Herald holds them (saying so in
 * the log when the wait begins and each minute after). Rejects when the database fails.
 */
export async function acquireShardLeases(
  leases: ShardLeases,
  options: {
    readonly logger: Logger;
    readonly pollMs?: number;
    /** Called (and awaited) once, when this process first finds its shards held and begins to wait (who holds them). */
    readonly onWaiting?: (holders: string) => void | Promise<void>;
  },
): Promise<void> {
  const pollMs = options.pollMs ?? SHARD_LEASE_POLL_MS;
  const started = Date.now();
  let saidAt: number | undefined;
  for (;;) {
    const holders = await leases.claim();
    if (holders.length === 0) {
      if (saidAt !== undefined) {
        options.logger.info('the shards are free: this process runs them now', {
          waitedMs: Date.now() - started,
        });
      }
      return;
    }
    const described = holders.map(describeHolder).join('; ');
    if (saidAt === undefined) await options.onWaiting?.(described);
    if (saidAt === undefined || Date.now() - saidAt >= 60_000) {
      saidAt = Date.now();
      options.logger.warn(
        'another Herald runs these shards: this process waits and starts when they are free (two processes on one shard would both answer its members and both pay)',
        { holders: described, waitedMs: Date.now() - started },
      );
    }
    await delay(pollMs);
  }
}

/**
 * Renews the leases every `renewMs` while the process runs; returns the stop. A renewal that finds another live
 * process holding a shard (this one stopped renewing long enough, frozen or cut off from the database, for it to
 * take over) calls `onLost`: two processes must not go on answering. A renewal the database refuses is logged and
 * tried again next time.
 */
export function keepShardLeases(
  leases: ShardLeases,
  options: {
    readonly logger: Logger;
    readonly onLost: (holders: readonly ShardLeaseHolder[]) => void;
    readonly renewMs?: number;
  },
): () => void {
  let lost = false;
  const timer = setInterval(() => {
    leases.claim().then(
      (holders) => {
        if (holders.length === 0 || lost) return;
        lost = true;
        options.logger.error(
          'another Herald took over this process’s shards while it was not renewing its lease',
          {
            holders: holders.map(describeHolder).join('; '),
          },
        );
        options.onLost(holders);
      },
      (error: unknown) => options.logger.warn('could not renew the shard lease', { err: error }),
    );
  }, options.renewMs ?? SHARD_LEASE_RENEW_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** A row as a {@link ShardLeaseHolder}. */
export function holderOf(row: ShardLeaseRow): ShardLeaseHolder {
  const count = Number(row.shard_count);
  return {
    shard: Number(row.shard_id) === EVERY_SHARD ? 'every' : Number(row.shard_id),
    count: count === AUTO_COUNT ? 'auto' : count,
    host: row.host,
    pid: Number(row.pid),
    expiresAt: Number(row.expires_at),
  };
}

/** `shard 3 of 8 on machine-b, pid 12`. */
export function describeHolder(holder: ShardLeaseHolder): string {
  const shard = holder.shard === 'every' ? 'every shard' : `shard ${holder.shard}`;
  return `${shard} of ${holder.count} on ${holder.host}, pid ${holder.pid}`;
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, and belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
