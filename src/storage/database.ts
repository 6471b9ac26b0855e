/**
 * The one door to Herald's database, whatever the engine: every store (settings, auto-read, budget) is written once
 * against {@link Database}, so no feature exists on one backend only. SQL uses `$1, $2, …` placeholders and the
 * subset both SQLite and PostgreSQL speak (`ON CONFLICT … DO UPDATE`, `RETURNING`).
 */

/** The engines Herald stores into: SQLite (one machine, embedded) and PostgreSQL (shared by several processes). */
export type Dialect = 'sqlite' | 'postgres';

/** A value bound to a placeholder. Integers up to 2^53 (nano-dollars, milliseconds) travel as numbers. */
export type SqlValue = string | number | null;

/** Statements, inside or outside a transaction. */
export interface Queryable {
  readonly dialect: Dialect;
  /** `' FOR UPDATE'` on PostgreSQL, `''` on SQLite (whose transactions already hold the database's write lock). */
  readonly forUpdate: string;
  /** Every row of a query. Integer columns (BIGINT, COUNT, SUM) come back as numbers on both engines. */
  all<Row>(sql: string, params?: readonly SqlValue[]): Promise<Row[]>;
  /** The first row of a query, or undefined. */
  get<Row>(sql: string, params?: readonly SqlValue[]): Promise<Row | undefined>;
  /** Runs a statement; resolves to the number of rows it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
}

/** Each engine's list of schema migrations for one component; append only, a released one is never edited. */
export interface Migrations {
  readonly sqlite: readonly string[];
  readonly postgres: readonly string[];
}

/** An open database: a SQLite file (or `:memory:`) or a PostgreSQL pool. */
export interface Database extends Queryable {
  /**
   * Runs `work` in one transaction that holds the write lock from its first statement: SQLite `BEGIN IMMEDIATE`
   * (one writer at a time across processes), PostgreSQL `BEGIN` plus the row locks `work` takes with
   * {@link Queryable.forUpdate}. Commits when `work` resolves, rolls back when it rejects.
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Brings `component`'s tables up to date, each migration in one transaction with its version bump. Safe when
   * several processes start at once: SQLite's write lock or a PostgreSQL advisory lock serialises them.
   * @throws when the database was written by a newer Herald (more migrations than this code knows).
   */
  migrate(component: string, migrations: Migrations): Promise<void>;
  /** Closes the file or the pool; further calls fail. Idempotent. */
  close(): Promise<void>;
}

/** The error for a schema newer than this code. */
export function newerSchemaError(component: string, version: number): Error {
  return new Error(
    `The ${component} tables (schema version ${version}) are newer than this Herald understands; upgrade Herald.`,
  );
}
