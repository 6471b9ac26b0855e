import type { Database } from './database.ts';
import { openPostgresDatabase } from './postgres/database.ts';
import { startWalCheckpoints, type WalCheckpoints } from './sqlite/checkpoints.ts';
import { openSqliteDatabase } from './sqlite/database.ts';

/** Where Herald's data lives, as parsed from `DATABASE_URL`. */
export type DatabaseConfig =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly poolSize: number };

/** Options of {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** PostgreSQL only: how long a statement may wait for a connection before it fails; default 10 s. */
  readonly connectTimeoutMs?: number;
  /** PostgreSQL only: how long a statement may wait for its answer before it fails; default 10 s. */
  readonly statementTimeoutMs?: number;
  /** SQLite only: who checkpoints the write-ahead log (`SqliteOptions`); default: this connection, as SQLite does. */
  readonly walCheckpoints?: 'here' | 'elsewhere';
}

/** Opens the configured database: a SQLite file (or `:memory:`) or a PostgreSQL pool. */
export function openDatabase(config: DatabaseConfig, options: OpenDatabaseOptions = {}): Database {
  const { walCheckpoints = 'here', ...timeouts } = options;
  return config.kind === 'sqlite'
    ? openSqliteDatabase(config.path, { walCheckpoints })
    : openPostgresDatabase({ url: config.url, poolSize: config.poolSize, ...timeouts });
}

/**
 * For a SQLite file: checkpoints its write-ahead log on a timer in this process (the shard manager), for shards
 * opened with `walCheckpoints: 'elsewhere'`. Undefined for PostgreSQL and `:memory:`, which have no such log.
 */
export function startCheckpointsFor(
  config: DatabaseConfig,
  onError: (error: unknown) => void,
): WalCheckpoints | undefined {
  if (config.kind !== 'sqlite' || config.path === ':memory:') return undefined;
  return startWalCheckpoints(config.path, { onError });
}
