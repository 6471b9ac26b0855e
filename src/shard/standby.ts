/**
 * A shard standing by. A shard process whose shards another Herald runs waits for their leases (lease.ts) for as
 * long as that Herald lives: on a second machine with the same `SHARD_IDS` that is hours. It tells its manager
 * (`tellManager`) when it begins to stand by and when it runs its shards, over the IPC channel of discord.js's
 * ShardingManager; the manager (`spawnShards`) then neither gives up on it after the ready timeout, which counts
 * from when the shard runs its shards, nor asks it what it cannot answer yet, and `/readyz` says why it waits.
 */

import type { Shard, ShardingManager } from 'discord.js';
import { type Config, secretsOf } from '../config.ts';
import type { Logger } from '../log.ts';
import type { OpsServer } from '../ops/index.ts';
import type { ManagerChannel } from './ipc.ts';

/** Shard process → manager: where the shard stands. */
type PhaseMessage =
  | { readonly heraldShard: 'standing-by'; readonly holders: string }
  | { readonly heraldShard: 'running' };

/** The end of the IPC channel a shard process speaks on (ipc.ts's, which it also answers on). */
export type ManagerLine = Pick<ManagerChannel, 'send' | 'connected'>;

/** In a shard process: tells the manager it stands by (`holders`: who runs its shards) or runs them. */
export function tellManager(
  phase: { readonly standingBy: string } | 'running',
  line: ManagerLine = process,
): void {
  if (!line.send || !line.connected) return;
  const message: PhaseMessage =
    phase === 'running'
      ? { heraldShard: 'running' }
      : { heraldShard: 'standing-by', holders: phase.standingBy };
  line.send(message, undefined, {}, () => {});
}

/**
 * What a process does while it stands by for its shards: `begin` (the lease wait's `onWaiting`) tells a managed
 * shard's manager, or starts a process of its own's standby endpoint (`METRICS_PORT`); `end`, once it holds its
 * shards, tells the manager it runs them, or closes that endpoint for the process's own.
 */
export function standByFor(
  config: Config,
  logger: Logger,
): { begin(holders: string): Promise<void>; end(): Promise<void> } {
  let ops: OpsServer | undefined;
  return {
    async begin(holders) {
      if (config.shards.managed) tellManager({ standingBy: holders });
      else if (config.ops.port !== undefined) {
        // Loaded only here: the sharding manager imports this file, and an endpoint is nothing it needs to spawn.
        const { startStandbyOpsServer } = await import('../ops/standby.ts');
        // On the machine of the Herald it waits for, the port is that one's: the wait goes on without an endpoint.
        ops = await startStandbyOpsServer({
          ...config.ops,
          port: config.ops.port,
          secrets: secretsOf(config),
          logger: logger.child({ component: 'ops' }),
          holders,
        }).catch((error: unknown) => {
          logger.warn('standing by without an ops endpoint: its port is taken', { err: error });
          return undefined;
        });
      }
    },
    async end() {
      if (config.shards.managed) tellManager('running');
      await ops?.close();
    },
  };
}

const phaseOf = (message: unknown): PhaseMessage | undefined =>
  typeof message === 'object' &&
  message !== null &&
  ((message as PhaseMessage).heraldShard === 'running' ||
    (message as PhaseMessage).heraldShard === 'standing-by')
    ? (message as PhaseMessage)
    : undefined;

/** In the manager: which shards stand by, and who runs them meanwhile. */
export interface Standbys {
  /** Who runs shard `id` while it stands by (hosts, pids); undefined when it does not stand by. */
  holders(id: number): string | undefined;
  /** Starts following a shard's messages (and its deaths: a respawned process starts over). */
  follow(shard: Shard): void;
}

/** The manager's record of its standing-by shards, logged as they begin and end. */
export function createStandbys(logger: Logger): Standbys {
  const standing = new Map<number, string>();
  return {
    holders: (id) => standing.get(id),
    follow(shard) {
      shard.on('message', (message: unknown) => {
        const phase = phaseOf(message);
        if (phase?.heraldShard === 'standing-by') {
          standing.set(shard.id, phase.holders);
          logger.info('shard stands by: another Herald runs it', {
            shardId: shard.id,
            holders: phase.holders,
          });
        } else if (phase?.heraldShard === 'running' && standing.delete(shard.id)) {
          logger.info('shard no longer stands by: it runs now', { shardId: shard.id });
        }
      });
      shard.on('death', () => standing.delete(shard.id));
    },
  };
}

/** Options of {@link spawnShards}. */
export interface SpawnOptions {
  /** Between one shard ready and the next spawned: Discord's identify pace. */
  readonly delayMs: number;
  /** How long a shard may take to become ready once it runs its shards (not while it stands by). */
  readonly readyTimeoutMs: number;
  /** Shards that will RESUME a stored session (no IDENTIFY): started together first, with no pause. */
  readonly resuming?: readonly number[];
}

/**
 * Starts the shards one after another as `ShardingManager#spawn` does (a shard, its ready, the identify pause,
 * the next), except that a shard standing by is waited for as long as it stands by. Each later shard waits
 * behind it: a standby's shards are all held by the same other Herald, and start in turn when it goes.
 * Respawns (a shard that died) are discord.js's, with no timeout. @throws when a shard's process exits before
 * it is ready, or it is not ready within `readyTimeoutMs` of running its shards.
 */
export async function spawnShards(
  manager: ShardingManager,
  ids: readonly number[],
  options: SpawnOptions,
): Promise<void> {
  const resuming = ids.filter((id) => options.resuming?.includes(id));
  await Promise.all(resuming.map((id) => untilReady(manager.createShard(id), options.readyTimeoutMs)));
  const identifying = ids.filter((id) => !resuming.includes(id));
  for (const [i, id] of identifying.entries()) {
    await untilReady(manager.createShard(id), options.readyTimeoutMs);
    if (i < identifying.length - 1 && options.delayMs > 0)
      await new Promise((r) => setTimeout(r, options.delayMs));
  }
}

/** Spawns `shard` and resolves when it is ready; the timeout pauses while it stands by. */
export function untilReady(shard: Shard, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      shard.off('message', onMessage);
      shard.off('ready', onReady);
      shard.off('death', onDeath);
      shard.off('disconnect', onDisconnect);
      if (error) reject(error);
      else resolve();
    };
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(
        () => finish(new Error(`shard ${shard.id} was not ready within ${Math.round(timeoutMs / 1000)} s`)),
        timeoutMs,
      );
    };
    const onMessage = (message: unknown): void => {
      const phase = phaseOf(message);
      if (phase?.heraldShard === 'standing-by') {
        clearTimeout(timer);
        timer = undefined;
      } else if (phase?.heraldShard === 'running') arm();
    };
    const onReady = (): void => finish();
    const onDeath = (): void => finish(new Error(`shard ${shard.id}'s process exited before it was ready`));
    const onDisconnect = (): void => finish(new Error(`shard ${shard.id} disconnected before it was ready`));
    shard.on('message', onMessage);
    shard.once('ready', onReady);
    shard.once('death', onDeath);
    shard.once('disconnect', onDisconnect);
    arm();
    // -1: discord.js does not time the spawn (this does); its respawns after a death are not timed either.
    shard
      .spawn(-1)
      .catch((error: unknown) => finish(error instanceof Error ? error : new Error(String(error))));
  });
}
