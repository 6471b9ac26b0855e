import { once } from 'node:events';
import type { Shard, ShardingManager } from 'discord.js';
import { prepareShardCacheFolders } from '../cache/shard-folders.ts';
import { type Config, secretsOf } from '../config.ts';
import { resumableShards } from '../gateway/resumable.ts';
import type { Logger } from '../log.ts';
import type { OpsServer } from '../ops/index.ts';
import { keepRecentProblems } from '../ops/recent-problems.ts';
import { type Database, openDatabase } from '../storage/index.ts';
import { shardIdsOf } from './config.ts';
import type { ManagerOps } from './manager-ops.ts';
import { SHARD_EXEC_ARGV } from './node-flags.ts';
import { loadShardingManager } from './sharding-manager.ts';
import { createStandbys, spawnShards } from './standby.ts';

/** What Discord says about starting sessions (`GET /gateway/bot`). */
export interface GatewayBot {
  /** The recommended shard count. */
  readonly shards: number;
  readonly sessionStartLimit: {
    readonly remaining: number;
    readonly resetAfterMs: number;
    /** Shards that may IDENTIFY at once (in different buckets); 1 for most bots. */
    readonly maxConcurrency: number;
  };
}

/** A running group of shard processes (`npm run start:shards`). */
export interface ShardGroup {
  readonly manager: ShardingManager;
  /** The bot's total shard count (resolved when `SHARD_COUNT=auto`). */
  readonly count: number;
  /** The shards this group runs. */
  readonly ids: readonly number[];
  /** The one operations endpoint for every shard here, when `METRICS_PORT` is set. */
  readonly ops: OpsServer | undefined;
  /** Stops every shard process (each stops cleanly, as on SIGTERM), then the endpoint. */
  stop(): Promise<void>;
}

/** Options of {@link startShardGroup}. */
export interface ShardGroupOptions {
  readonly config: Config;
  /** The shard process's entry (`src/index.ts`). */
  readonly script: string;
  readonly logger: Logger;
  /** How long one shard may take to log in and fill its caches; default 60 s. */
  readonly readyTimeoutMs?: number;
}

/** Discord lets one identify bucket start a session every 5 s; a little more keeps clear of the edge. */
const IDENTIFY_INTERVAL_MS = 5_500;

/**
 * Runs the configured shards with discord.js's ShardingManager, one process each (process mode, so a crash takes
 * one shard down, and `kill -9` of one leaves the others speaking). A shard that dies is respawned with the same
 * environment. With `METRICS_PORT`, this process serves the one endpoint: `/metrics` summed over every shard,
 * `/readyz` ready when every shard is, and the status page (the budget and ledger from the shared database, the
 * rest from every shard); the shards serve none (they would all want the same port).
 * @throws when Discord refuses the token, or a shard does not become ready in time.
 */
export async function startShardGroup(options: ShardGroupOptions): Promise<ShardGroup> {
  const { config } = options;
  // The manager's own warnings (a shard died, a respawn failed) are kept for its status page too.
  const problems = keepRecentProblems(options.logger, { secrets: secretsOf(config) });
  const { logger } = problems;
  // With the shard count configured, the stored sessions are read while Discord is asked for the session limit
  // (a TLS connection to discord.com: a few round trips that a restart's shards would otherwise wait for too).
  const fixed = config.shards.count === 'auto' ? undefined : config.shards.count;
  const stored =
    fixed === undefined ? undefined : resumingShards(config, shardIdsOf(config.shards, fixed), fixed, logger);
  const gateway = await fetchGatewayBot(config.discord.restUrl, config.discord.token);
  const count = fixed ?? gateway.shards;
  const ids = shardIdsOf(config.shards, count);
  if (gateway.sessionStartLimit.remaining < ids.length) {
    throw new Error(
      `Discord allows ${gateway.sessionStartLimit.remaining} more session starts until ${new Date(Date.now() + gateway.sessionStartLimit.resetAfterMs).toISOString()}, fewer than the ${ids.length} shards to start.`,
    );
  }
  // Consecutive shard ids fall in different identify buckets, so with max_concurrency buckets one start every
  // 5.5 s / max_concurrency keeps each bucket to one IDENTIFY per 5.5 s.
  const delay = Math.ceil(IDENTIFY_INTERVAL_MS / Math.max(1, gateway.sessionStartLimit.maxConcurrency));
  const manager = new (loadShardingManager())(options.script, {
    totalShards: count,
    shardList: [...ids],
    mode: 'process',
    respawn: true,
    execArgv: [...SHARD_EXEC_ARGV],
  });
  // discord.js emits 'death' for a shard stopped on purpose too (kill(), without respawning it).
  let stopping = false;
  const standbys = createStandbys(logger);
  manager.on('shardCreate', (shard) => {
    watchShard(shard, logger, () => stopping);
    standbys.follow(shard);
  });
  if (config.cache.maxBytes > 0) {
    await prepareShardCacheFolders(config.cache.dir, { count, firstId: ids[0] ?? 0, logger });
  }
  let ops: Promise<ManagerOps | undefined> = Promise.resolve(undefined);
  const stop = async (): Promise<void> => {
    stopping = true;
    await (await ops.catch(() => undefined))?.close();
    await Promise.all(
      ids.map((id) => manager.shards.get(id)).flatMap((shard) => (shard ? [stopShard(shard)] : [])),
    );
  };

  // Shards a planned stop left resumable start together: a RESUME waits for no identify slot. They are spawned
  // before this process loads anything more (the endpoint below): on a restart each shard's way back to voice is
  // its own load, and the machine's cores are better spent on it.
  const resuming = await (stored ?? resumingShards(config, ids, count, logger));
  logger.info('starting shards', {
    count,
    ids: ids.join(','),
    spawnDelayMs: delay,
    resuming: resuming.join(','),
  });
  const spawned = spawnShards(manager, ids, {
    delayMs: delay,
    readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
    resuming,
  });
  // The endpoint comes up while the shards start (they may stand by for hours): /healthz answers meanwhile and
  // /readyz says which shards are not ready yet.
  const port = config.ops.port;
  if (port !== undefined) {
    ops = import('./manager-ops.ts').then(({ startManagerOps }) =>
      startManagerOps({
        config: { ...config, ops: { ...config.ops, port } },
        manager,
        ids,
        standbys,
        recentProblems: problems.recent,
        logger,
      }),
    );
  }
  const [started, endpoint] = await Promise.allSettled([spawned, ops]);
  const failure = [started, endpoint].find((outcome) => outcome.status === 'rejected');
  if (failure) {
    await stop();
    throw failure.reason;
  }
  logger.info('every shard is ready', { count, ids: ids.join(',') });
  return {
    manager,
    count,
    ids,
    ops: endpoint.status === 'fulfilled' ? endpoint.value?.server : undefined,
    stop,
  };
}

/** kill() sends SIGTERM (Herald stops cleanly, within 10 s) and takes the respawn listener off first. */
async function stopShard(shard: Shard): Promise<void> {
  const child = shard.process;
  shard.kill();
  if (child && child.exitCode === null && child.signalCode === null) {
    await Promise.race([once(child, 'exit'), new Promise((resolve) => setTimeout(resolve, 12_000))]);
  }
}

/** The shards whose stored gateway session will be RESUMEd; none when the database cannot say. Never rejects. */
async function resumingShards(
  config: Config,
  ids: readonly number[],
  count: number,
  logger: Logger,
): Promise<number[]> {
  let db: Database | undefined;
  try {
    db = openDatabase(config.database);
    return await resumableShards(db, ids, count);
  } catch (error) {
    logger.warn('could not read the stored gateway sessions; every shard identifies', { err: error });
    return [];
  } finally {
    await db?.close().catch(() => {});
  }
}

/**
 * The manager's logger: its lines say `"process":"manager"`, and those about one shard add `"shard":N`, so each key
 * has one meaning (`"shard"` is a shard id in every process's lines) and no line carries a key twice.
 */
export function managerLogger(logger: Logger): Logger {
  return logger.child({ process: 'manager' });
}

/** Logs a shard's life: started, ready, died (and so respawned) or stopped, and its errors. */
export function watchShard(shard: Pick<Shard, 'id' | 'on'>, logger: Logger, stopping: () => boolean): void {
  const log = logger.child({ shard: shard.id });
  shard.on('spawn', (child) =>
    log.info('shard process started', { shardPid: (child as { pid?: number }).pid }),
  );
  shard.on('ready', () => log.info('shard ready'));
  shard.on('death', (child) => {
    const exit = child as { exitCode?: number | null; signalCode?: string | null };
    if (stopping()) {
      log.info('shard process stopping');
      return;
    }
    log.warn('shard process died; starting it again', { code: exit.exitCode, signal: exit.signalCode });
  });
  // Without a listener an 'error' event would end the manager; a failed respawn is logged and tried at the next death.
  shard.on('error', (error) => log.error('shard error', { err: error }));
}

/**
 * `GET /gateway/bot` on Discord (or the REST base Herald is configured with, as for the bot itself): the
 * recommended shard count and the session start limit. discord.js's own `fetchRecommendedShardCount` always asks
 * discord.com, so it cannot be pointed at a REST proxy or the emulator.
 * @throws with a sentence that never includes the token.
 */
export async function fetchGatewayBot(restUrl: string | undefined, token: string): Promise<GatewayBot> {
  const base = restUrl ?? 'https://discord.com/api';
  const response = await fetch(`${base}/v10/gateway/bot`, { headers: { authorization: `Bot ${token}` } });
  if (response.status === 401) throw new Error('Discord refused the bot token (401) at GET /gateway/bot.');
  if (!response.ok) throw new Error(`GET /gateway/bot answered ${response.status}.`);
  const body = (await response.json()) as {
    shards?: number;
    session_start_limit?: { remaining?: number; reset_after?: number; max_concurrency?: number };
  };
  const limit = body.session_start_limit ?? {};
  return {
    shards: Math.max(1, body.shards ?? 1),
    sessionStartLimit: {
      remaining: limit.remaining ?? Number.POSITIVE_INFINITY,
      resetAfterMs: limit.reset_after ?? 0,
      maxConcurrency: Math.max(1, limit.max_concurrency ?? 1),
    },
  };
}
