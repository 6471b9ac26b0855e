/**
 * The sharding manager's one operations endpoint (`METRICS_PORT`): `/metrics` summed over every shard, `/readyz`
 * ready when every shard is, `/healthz` per shard, and the status page (the budget and ledger from the shared
 * database, the rest from every shard). Loaded by the manager only when the endpoint is asked for, and only once
 * its shards are spawning: nothing here is on a restart's way back to voice.
 */
import type { ShardingManager } from 'discord.js';
import { AggregatorRegistry } from 'prom-client';
import { createBudgetGuard, createBudgetStore } from '../budget/index.ts';
import { type Config, secretsOf } from '../config.ts';
import type { Logger } from '../log.ts';
import { type OpsServer, type RecentProblem, standingBySentence, startOpsServer } from '../ops/index.ts';
import { type Database, openDatabase } from '../storage/index.ts';
import { askEach } from './ipc.ts';
import type { Standbys } from './standby.ts';
import { mergeShardStatus } from './status.ts';

/** How long a shard may take to answer a scrape, a readiness check or the status page. */
const ASK_TIMEOUT_MS = 5_000;
/** The manager only reads the budget and the ledger for its status page: two connections are plenty. */
const MANAGER_POOL_SIZE = 2;

/** What the endpoint reads from the manager. */
export interface ManagerOpsOptions {
  readonly config: Config & { readonly ops: { readonly port: number } };
  readonly manager: ShardingManager;
  /** The shards this group runs. */
  readonly ids: readonly number[];
  readonly standbys: Standbys;
  /** The manager's own recent warnings and errors, for the status page. */
  readonly recentProblems: () => readonly RecentProblem[];
  readonly logger: Logger;
}

/** The manager's endpoint, running. */
export interface ManagerOps {
  readonly server: OpsServer;
  /** Closes the endpoint, then its database. */
  close(): Promise<void>;
}

/**
 * Starts the manager's endpoint. A shard standing by answers nothing yet (it has not built what it would answer
 * with): the endpoint says why. @throws when the port cannot be listened on or the database cannot be read.
 */
export async function startManagerOps(options: ManagerOpsOptions): Promise<ManagerOps> {
  const { config, manager, ids, standbys, logger } = options;
  const standingNow = (): Map<number, string> =>
    new Map(
      ids.flatMap((id) => {
        const holders = standbys.holders(id);
        return holders === undefined ? [] : [[id, standingBySentence(holders)] as const];
      }),
    );
  const running = (standing: ReadonlyMap<number, string>): number[] => ids.filter((id) => !standing.has(id));
  // The status page's budget and ledger: read from the database every shard writes, by a guard that only reads
  // (no owner: it reconciles nothing and reserves nothing).
  const db: Database = openDatabase(
    config.database.kind === 'postgres'
      ? { ...config.database, poolSize: Math.min(MANAGER_POOL_SIZE, config.database.poolSize) }
      : config.database,
  );
  try {
    const store = await createBudgetStore(db);
    const budget = await createBudgetGuard({
      store,
      floorUsd: config.budget.floorUsd,
      warnUsd: config.budget.warnUsd,
      pricePerCharUsd: config.budget.pricePerCharUsd,
      memberCharsPerMinute: config.budget.memberCharsPerMinute,
      logger: logger.child({ component: 'budget' }),
    });
    const server = await startOpsServer({
      port: config.ops.port,
      host: config.ops.host,
      token: config.ops.token,
      registry: {
        contentType: AggregatorRegistry.PROMETHEUS_CONTENT_TYPE,
        metrics: async () => {
          const replies = await askEach(manager.shards, running(standingNow()), 'metrics', ASK_TIMEOUT_MS);
          return AggregatorRegistry.aggregate(replies.flatMap((r) => (r.ok ? [r.value] : []))).metrics();
        },
      },
      readiness: async () => {
        const standing = standingNow();
        const replies = await askEach(manager.shards, running(standing), 'readiness', ASK_TIMEOUT_MS);
        const checks = new Map<number, unknown>([
          ...replies.map((r) => [r.id, r.ok ? r.value : { ready: false, detail: r.detail }] as const),
          ...[...standing].map(([id, detail]) => [id, { ready: false, standingBy: true, detail }] as const),
        ]);
        return {
          ready: replies.length === ids.length && replies.every((r) => r.ok && r.value.ready),
          shards: Object.fromEntries(ids.map((id) => [String(id), checks.get(id)])),
        };
      },
      health: () => ({
        shards: Object.fromEntries(
          ids.map((id) => {
            const shard = manager.shards.get(id);
            const state = !shard?.process
              ? 'down'
              : shard.ready
                ? 'ready'
                : standbys.holders(id) !== undefined
                  ? 'standing by'
                  : 'starting';
            return [String(id), state];
          }),
        ),
      }),
      status: {
        budget: () => budget.status(),
        ledger: (since) => store.ledger({ since }),
        live: async () => {
          const standing = standingNow();
          const replies = await askEach(manager.shards, running(standing), 'status', ASK_TIMEOUT_MS);
          return mergeShardStatus(replies, options.recentProblems(), standing);
        },
      },
      secrets: secretsOf(config),
      logger: logger.child({ component: 'ops' }),
    });
    return {
      server,
      async close() {
        await server.close();
        await db.close();
      },
    };
  } catch (error) {
    await db.close();
    throw error;
  }
}
