/**
 * The IDENTIFY throttler of a process that runs only some of the bot's shards: the others run elsewhere (the sharding
 * manager's other processes, another machine with other SHARD_IDS, a shard respawned after a crash), and Discord
 * counts every IDENTIFY of the bot, so the slots are taken in the shared database (see identify-slots.ts). A process
 * that runs every shard keeps discord.js's own throttler, which sees every IDENTIFY there is.
 */
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import { type ShardConfig, shardIdsOf } from '../shard/config.ts';
import type { Database } from '../storage/database.ts';
import { createIdentifySlots, type IdentifySlots } from './identify-slots.ts';

/** How long a throttler waits before it asks a database that failed again. */
export const IDENTIFY_RETRY_MS = 2_000;

/** What @discordjs/ws asks of an identify throttler (its `IIdentifyThrottler`). */
export interface IdentifyThrottler {
  /** Resolves once shard `shardId` may IDENTIFY; rejects (promptly) when `signal` aborts: the shard closed meanwhile. */
  waitForIdentify(shardId: number, signal: AbortSignal): Promise<void>;
}

/** Options of {@link createSharedIdentifyThrottler}. */
export interface SharedIdentifyThrottlerOptions {
  /** Discord's `session_start_limit.max_concurrency`: the number of buckets. */
  readonly maxConcurrency: number;
  readonly logger: Logger;
  /** Recorded with each slot taken, so that a process waiting can say for whom; default this machine and process. */
  readonly host?: string;
  readonly pid?: number;
  /** Default {@link IDENTIFY_RETRY_MS}. */
  readonly retryMs?: number;
}

/**
 * A throttler over `slots`: one IDENTIFY per bucket (`shard_id % max_concurrency`) per window across every process
 * on the database. A database that fails is asked again every `retryMs` (said once in the log, and when it answers
 * again): a shard does not IDENTIFY without a slot, as Discord would refuse one too many.
 */
export function createSharedIdentifyThrottler(
  slots: IdentifySlots,
  options: SharedIdentifyThrottlerOptions,
): IdentifyThrottler {
  const { logger } = options;
  const buckets = Math.max(1, Math.floor(options.maxConcurrency));
  const host = options.host ?? hostname();
  const pid = options.pid ?? process.pid;
  const retryMs = options.retryMs ?? IDENTIFY_RETRY_MS;
  return {
    async waitForIdentify(shardId, signal) {
      const bucket = shardId % buckets;
      const fields = { shard: shardId, bucket };
      let failing = false;
      let toldWaiting = false;
      for (;;) {
        signal.throwIfAborted();
        let slot: Awaited<ReturnType<IdentifySlots['claim']>>;
        try {
          slot = await slots.claim(bucket, { shardId, host, pid });
        } catch (error) {
          if (!failing) {
            logger.warn(
              'the database did not give an identify slot; this shard asks again before it logs in',
              {
                ...fields,
                err: error,
              },
            );
          }
          failing = true;
          await delay(retryMs, undefined, { signal });
          continue;
        }
        if (failing) logger.info('the database gives identify slots again', fields);
        failing = false;
        signal.throwIfAborted();
        if (slot.kind === 'claimed') return;
        if (!toldWaiting) {
          toldWaiting = true;
          const { last } = slot;
          logger.info('another shard identified in this bucket within 5 s; this one waits its turn', {
            ...fields,
            waitMs: slot.waitMs,
            after: `shard ${last.shardId} on ${last.host}, pid ${last.pid}`,
          });
        }
        await delay(slot.waitMs, undefined, { signal });
      }
    },
  };
}

/** The part of @discordjs/ws's WebSocketManager a throttler is built from. */
export interface GatewayInformationSource {
  fetchGatewayInformation(): Promise<{ readonly session_start_limit: { readonly max_concurrency: number } }>;
}

/** The client's `ws` option that picks the throttler (spread into `ws`). */
export interface IdentifyThrottlerOption {
  /** Called by @discordjs/ws at the first IDENTIFY, once the gateway's `max_concurrency` is known. */
  buildIdentifyThrottler?(manager: GatewayInformationSource): Promise<IdentifyThrottler>;
}

/** What {@link identifyThrottlerOptions} builds a shared throttler with. */
export interface IdentifyDependencies {
  readonly db: Database;
  readonly logger: Logger;
}

/**
 * True when other processes may IDENTIFY shards of this bot: this one runs only some of a fixed count (a managed
 * shard, or SHARD_IDS). One process with every shard (unsharded, or `SHARD_COUNT=auto`, which no other process may
 * run beside: the shard leases) sees every IDENTIFY itself.
 */
export function sharesIdentifyBuckets(shards: ShardConfig): boolean {
  return shards.count !== 'auto' && shardIdsOf(shards, shards.count).length < shards.count;
}

/**
 * The client's identify throttler: shared through the database when other processes run shards of this bot
 * ({@link sharesIdentifyBuckets}), else nothing (discord.js's own, with Discord's `max_concurrency`).
 */
export function identifyThrottlerOptions(
  shards: ShardConfig,
  deps: IdentifyDependencies | undefined,
): IdentifyThrottlerOption {
  if (deps === undefined || !sharesIdentifyBuckets(shards)) return {};
  const slots = createIdentifySlots(deps.db);
  return {
    async buildIdentifyThrottler(manager) {
      // Already fetched (and cached by @discordjs/ws) when the client logged in.
      const info = await manager.fetchGatewayInformation();
      return createSharedIdentifyThrottler(slots, {
        maxConcurrency: info.session_start_limit.max_concurrency,
        logger: deps.logger,
      });
    },
  };
}
