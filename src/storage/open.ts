import type { Database } from './database.ts';
import { openPostgresDatabase } from './postgres/database.ts';
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
}

/** Opens the configured database: a SQLite file (or `:memory:`) or a PostgreSQL pool. */
export function openDatabase(config: DatabaseConfig, options: OpenDatabaseOptions = {}): Database {
  return config.kind === 'sqlite'
    ? openSqliteDatabase(config.path)
    : openPostgresDatabase({ url: config.url, poolSize: config.poolSize, ...options });
}
