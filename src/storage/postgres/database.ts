import { Socket } from 'node:net';
import pg from 'pg';
import {
  type Database,
  type Migrations,
  newerSchemaError,
  type Queryable,
  type SqlValue,
} from '../database.ts';

/** Options of {@link openPostgresDatabase}. */
export interface PostgresOptions {
  /** `postgres://user:password@host:port/database` (or `postgresql://…`). */
  readonly url: string;
  /** Most connections this process opens (`DATABASE_POOL_SIZE`). */
  readonly poolSize: number;
  /**
   * How long a statement may wait for a connection (opening one, or one of the pool's to come free) before it fails;
   * default {@link DEFAULT_CONNECT_TIMEOUT_MS}.
   */
  readonly connectTimeoutMs?: number;
  /**
   * How long a statement sent on a connection may wait for PostgreSQL's answer before it fails with a
   * {@link DatabaseTimeoutError} and its connection is closed; default {@link DEFAULT_STATEMENT_TIMEOUT_MS}.
   * Migrations are not bounded. {@link Database.close} waits for statements at most this long (2 s at most). The
   * server ends a session idle in a transaction for this long (`idle_in_transaction_session_timeout`).
   */
  readonly statementTimeoutMs?: number;
}

/**
 * A server that drops packets instead of refusing them would otherwise hold a statement for as long as the kernel
 * retries (minutes). Generous beside a healthy connect (milliseconds), and beside a busy pool's queue.
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * A host that goes silent after a statement was sent (a network partition, a frozen VM) would otherwise hold it,
 * and the member waiting on it, for as long as the kernel retransmits (many minutes). Herald's statements answer in
 * milliseconds; this is generous beside them and beside a short wait for the budget's row lock.
 */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;

/**
 * The most {@link Database.close} waits for statements in flight before it destroys every connection: a healthy
 * database answers long before, and the entry point gives a whole stop only 10 s, of which draining audio takes 5.
 */
const CLOSE_WAIT_MS = 2_000;

/**
 * Quiet before TCP keepalive probes start on a connection. An idle connection to a host that vanished without a FIN
 * or a reset looks alive for ever; probes find it dead (libuv then probes every second, ten times). This is the one
 * bound on a migration waiting for another process's advisory lock, which no timeout may cut short.
 */
const KEEPALIVE_IDLE_MS = 10_000;

/** pg's message when a query's `query_timeout` passes unanswered (pg/lib/client.js); it carries no code. */
const PG_READ_TIMEOUT = 'Query read timeout';

/** A statement PostgreSQL did not answer in time; its connection was closed, and the next statement opens another. */
export class DatabaseTimeoutError extends Error {
  override readonly name: string = 'DatabaseTimeoutError';
  /** Stable, for programs to switch on; `message` is for people. */
  readonly code = 'DATABASE_TIMEOUT';
  /** The bound that passed ({@link PostgresOptions.statementTimeoutMs}). */
  readonly timeoutMs: number;

  constructor(timeoutMs: number, options?: ErrorOptions) {
    super(
      `PostgreSQL did not answer a statement within ${duration(timeoutMs)} (statement timeout): the database host ` +
        'may be unreachable or stalled. Its connection was closed; the next statement opens a new one.',
      options,
    );
    this.timeoutMs = timeoutMs;
  }
}

/** Network errors that mean no PostgreSQL answered at the URL's host and port. */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * Failures that say PostgreSQL cannot be reached or is going away, not that a statement was wrong: those above, a
 * connection cut (ECONNRESET, EPIPE), SQLSTATE class 08 (connection exception), 57P01–57P03 (shut down by an admin,
 * after a crash, not yet accepting connections), and pg's own words for a connection that ended or could not open
 * in time.
 */
const UNAVAILABLE_CODES = new Set([...UNREACHABLE_CODES, 'ECONNRESET', 'EPIPE', '57P01', '57P02', '57P03']);
const UNAVAILABLE_MESSAGE = /^Connection terminated|timeout exceeded when trying to connect/;

/** Errors the adapter passed on from pg: only those are judged by {@link isDatabaseUnavailable}. */
const fromPostgres = new WeakSet<object>();

/** Remembers that `error` came from PostgreSQL (or from reaching it), and returns it. */
function passedOn(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) fromPostgres.add(error);
  return error;
}

/**
 * True for a failure of the database itself, not of what was asked of it: a statement PostgreSQL did not answer in
 * time, or a connection it refused, cut or could not open. The member can do nothing about it but try again later.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseTimeoutError) return true;
  if (!(error instanceof Error) || !fromPostgres.has(error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
  return UNAVAILABLE_MESSAGE.test(error.message);
}

const duration = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);

// Every process running migrations takes this session-level advisory lock first, so two processes starting at
// once apply each migration once: the second waits, then finds the versions already bumped. Any constant works
// as long as it is always the same; this one spells "herald" in ASCII.
const MIGRATION_LOCK = 0x686572616c64;

// BIGINT (20), and NUMERIC (1700, what SUM over BIGINT returns) as numbers: Herald's integers are nano-dollars and
// milliseconds, far below 2^53. pg returns them as strings by default to be safe with larger ones.
const INT8 = 20;
const NUMERIC = 1700;
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/** A query's config with pg's client-side bound, which pg reads (lib/client.js) and @types/pg leaves out. */
type TimedQuery = pg.QueryConfig<SqlValue[]> & { readonly query_timeout: number };

/**
 * Sends one statement, failing with a {@link DatabaseTimeoutError} when no answer comes within `timeoutMs`. pg's
 * timeout leaves the statement as its connection's active one, so that connection must never be reused: a pool
 * query is released with the error, and {@link withClient} releases with it, and pg-pool then destroys the
 * connection (`client.end()` on a client with a statement in flight destroys its socket).
 */
async function bounded(
  client: pg.Pool | pg.PoolClient,
  timeoutMs: number,
  text: string,
  values: readonly SqlValue[] = [],
): Promise<pg.QueryResult> {
  const query: TimedQuery = { text, values: [...values], query_timeout: timeoutMs };
  try {
    return await client.query(query);
  } catch (error) {
    if (error instanceof Error && error.message === PG_READ_TIMEOUT) {
      throw new DatabaseTimeoutError(timeoutMs, { cause: error });
    }
    throw passedOn(error);
  }
}

const over = (client: pg.Pool | pg.PoolClient, timeoutMs: number): Queryable => ({
  dialect: 'postgres',
  forUpdate: ' FOR UPDATE',
  async all<Row>(sql: string, params: readonly SqlValue[] = []) {
    return (await bounded(client, timeoutMs, sql, params)).rows as Row[];
  },
  async get<Row>(sql: string, params: readonly SqlValue[] = []) {
    return (await bounded(client, timeoutMs, sql, params)).rows[0] as Row | undefined;
  },
  async run(sql, params = []) {
    return (await bounded(client, timeoutMs, sql, params)).rowCount ?? 0;
  },
});

/** A {@link Database} on a PostgreSQL connection pool. Connects lazily, on the first statement. */
export function openPostgresDatabase(options: PostgresOptions): Database {
  const timeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  // Every socket the pool opens, connected or still connecting, so a close can destroy what a silent host holds.
  const sockets = new Set<Socket>();
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    types,
    // No pool-wide query_timeout or statement_timeout: migrations wait on another process's advisory lock for as
    // long as its migrations take. Every other statement is sent by `bounded`, with statementTimeoutMs.
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    // The server's side of the same bound. A process cut off mid-transaction (partitioned, frozen, killed without a
    // FIN) would otherwise hold the budget's row lock until the server's own keepalive notices (two hours by
    // default), and every other process's reservation would time out meanwhile. Herald never waits between the
    // statements of a transaction, so a session idle in one for this long is gone: the server ends it.
    idle_in_transaction_session_timeout: timeoutMs,
    // The socket pg would make itself (a plain one; TLS, when asked, is layered on it), remembered.
    stream: () => {
      const socket = new Socket();
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      return socket;
    },
  });
  let closing: Promise<void> | undefined;
  // An idle client losing its connection emits 'error' on the pool; without a listener that would exit Herald.
  // The next query gets a fresh connection, so there is nothing else to do.
  pool.on('error', () => {});

  const withClient = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect().catch((error: unknown) => {
      throw passedOn(error);
    });
    // A checked-out client whose connection drops emits 'error' besides failing its statement, and pg-pool listens
    // only while the client is idle: unheard, that would exit Herald. The failed statement carries the error.
    const ignore = (): void => {};
    client.on('error', ignore);
    let broken: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      broken = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      client.off('error', ignore);
      // A client whose transaction failed half-way (or whose statement timed out and is still in flight) may be in
      // any state: destroy it rather than reuse it.
      client.release(broken);
    }
  };

  const transaction = <T>(work: (tx: Queryable) => Promise<T>): Promise<T> =>
    withClient(async (client) => {
      await bounded(client, timeoutMs, 'BEGIN');
      try {
        const result = await work(over(client, timeoutMs));
        await bounded(client, timeoutMs, 'COMMIT');
        return result;
      } catch (error) {
        // A timed-out statement is still the connection's active one, and a ROLLBACK would only queue behind it.
        // The connection is destroyed on release, and PostgreSQL rolls back a transaction whose connection is gone.
        if (!(error instanceof DatabaseTimeoutError)) {
          await bounded(client, timeoutMs, 'ROLLBACK').catch(() => {});
        }
        throw error;
      }
    });

  /**
   * Ends the pool, which waits for every connection still checked out (a statement in flight, a migration waiting
   * for its lock) or still opening. A silent host would hold those for their whole bounds, or for ever, so past
   * the wait every socket left is destroyed, which fails what was still in flight.
   */
  const end = async (): Promise<void> => {
    const ended = pool.end();
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<'waited'>((resolve) => {
      timer = setTimeout(() => resolve('waited'), Math.min(timeoutMs, CLOSE_WAIT_MS));
    });
    const first = await Promise.race([ended.then(() => 'ended' as const), waited]);
    clearTimeout(timer);
    if (first === 'waited') {
      for (const socket of sockets) socket.destroy();
      await ended;
    }
  };

  return {
    ...over(pool, timeoutMs),
    transaction,
    async migrate(component: string, migrations: Migrations) {
      const list = migrations.postgres;
      // Not `bounded`: the advisory lock waits as long as another process's migrations take, and a migration may
      // rewrite a large table. TCP keepalive is what finds a host that vanished meanwhile.
      await withClient(async (client) => {
        await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
        try {
          await client.query(
            'CREATE TABLE IF NOT EXISTS schema_migrations (component TEXT PRIMARY KEY, version INTEGER NOT NULL)',
          );
          const found = await client.query<{ version: number }>(
            'SELECT version FROM schema_migrations WHERE component = $1',
            [component],
          );
          const current = found.rows[0]?.version ?? 0;
          if (current > list.length) throw newerSchemaError(component, current);
          for (let version = current; version < list.length; version++) {
            await client.query('BEGIN');
            try {
              await client.query(list[version] ?? '');
              await client.query(
                `INSERT INTO schema_migrations (component, version) VALUES ($1, $2)
                 ON CONFLICT (component) DO UPDATE SET version = excluded.version`,
                [component, version + 1],
              );
              await client.query('COMMIT');
            } catch (error) {
              await client.query('ROLLBACK').catch(() => {});
              throw error;
            }
          }
        } finally {
          await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
        }
      });
    },
    close() {
      closing ??= end();
      return closing;
    },
  };
}
