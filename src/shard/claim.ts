import { hostname } from 'node:os';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Database } from '../storage/database.ts';
import { acquireShardLeases, claimOf, createShardLeases, keepShardLeases } from './lease.ts';
import { standByFor } from './standby.ts';

/** This process's hold on its shards, from {@link claimShards}. */
export interface ShardClaimHold {
  /** Stops renewing the leases and gives them up, so a process waiting for these shards may start. Never rejects. */
  release(): Promise<void>;
}

/**
 * One process per shard: resolves once this process holds its shards' leases in `db`. A second Herald on these
 * shards (a second npm start, overlapping SHARD_IDS) waits here until they are free, standing by meanwhile (a
 * managed shard tells its manager; a process of its own serves /healthz and /readyz), before it reconciles the
 * budget's reservations or connects to anything. The leases are then renewed; `onLost` is called when another
 * Herald took them over.
 */
export async function claimShards(
  db: Database,
  config: Config,
  options: { readonly logger: Logger; readonly onLost: () => void },
): Promise<ShardClaimHold> {
  const { logger } = options;
  const leases = await createShardLeases(db, {
    ...claimOf(config.shards),
    host: hostname(),
    pid: process.pid,
  });
  const standby = standByFor(config, logger);
  await acquireShardLeases(leases, { logger, onWaiting: standby.begin });
  await standby.end();
  const stopKeeping = keepShardLeases(leases, { logger, onLost: options.onLost });
  return {
    async release() {
      stopKeeping();
      await leases
        .release()
        .catch((error: unknown) => logger.warn('could not release the shard lease', { err: error }));
    },
  };
}
