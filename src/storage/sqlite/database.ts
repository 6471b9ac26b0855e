import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import {
  type Database,
  type Migrations,
  newerSchemaError,
  type Queryable,
  type SqlValue,
} from '../database.ts';

/** `$1` → `?1`: SQLite numbers its parameters with `?`, and `$1` would be a named one there. */
const placeholders = (sql: string): string => sql.replace(/\$(\d+)/g, '?$1');

/** Prepared statements kept per connection; past this many (SQL built with a varying list), the cache starts over. */
const STATEMENT_CACHE_SIZE = 256;

/** How long calls may run back to back before the event loop gets a turn (timers, the voice packets' cycle). */
const SLICE_MS = 5;

/** Resolves in the event loop's next check phase, after the timers and I/O that are due. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A few milliseconds, at random, before a busy database is tried again (so that waiters do not retry in step). */
const busyPause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 10));

/** SQLITE_BUSY: another connection holds the write lock. */
const SQLITE_BUSY = 5;
/** How long a statement keeps retrying a busy database before it fails (what busy_timeout would wait). */
const BUSY_LIMIT_MS = 10_000;

const isBusy = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && (error as { errcode?: unknown }).errcode === SQLITE_BUSY;

/**
 * Runs `attempt` until it does not fail with SQLITE_BUSY, waiting a few milliseconds between tries. node:sqlite is
 * synchronous, so SQLite's own busy_timeout would block the whole thread, including the connection in this same
 * process that holds the lock and is waiting to finish its transaction: waiting here, asynchronously, lets it.
 */
async function retryBusy<T>(attempt: () => T): Promise<T> {
  const started = Date.now();
  for (;;) {
    try {
      return attempt();
    } catch (error) {
      if (!isBusy(error) || Date.now() - started > BUSY_LIMIT_MS) throw error;
      await busyPause();
    }
  }
}

/** A write that found the file's write lock taken by another connection; it waits outside the queue. */
const BUSY = Symbol('busy');

/**
 * Opens (creating folders as needed) the SQLite database at `path`, or ':memory:'. node:sqlite is synchronous,
 * so every statement runs at once; a transaction's `await`s could let another caller's statements in between,
 * so calls on this connection queue behind an open transaction (one transaction at a time). A write that finds
 * the file's write lock held by another connection (another shard process) waits for it outside that queue,
 * retrying asynchronously: this connection's reads, which WAL never blocks, go on meanwhile, and its writes keep
 * their order.
 */
export function openSqliteDatabase(path: string): Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  // WAL keeps readers off the writer's back. synchronous=NORMAL: a commit is written to the WAL before it returns
  // (so it survives `kill -9` of Herald) but not fsync'd, which FULL did on the event loop for every ledger row
  // and stalled every playing stream; only an OS crash or power loss can lose the last commits.
  // busy_timeout stays 0: a busy database is retried by retryBusy, without blocking the thread.
  db.exec('PRAGMA busy_timeout = 1000; PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 0;');
  db.exec('PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;');
  const ready = retryBusy(() =>
    db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (component TEXT PRIMARY KEY, version INTEGER NOT NULL)',
    ),
  );

  // Each statement is compiled once: compiling it again for every call was most of SQLite's CPU on the event loop
  // (a reservation and its settlement run a dozen statements each, for every utterance).
  const statements = new Map<string, StatementSync>();
  const prepared = (sql: string): StatementSync => {
    let statement = statements.get(sql);
    if (!statement) {
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
      statement = db.prepare(placeholders(sql));
      statements.set(sql, statement);
    }
    return statement;
  };

  const direct: Queryable = {
    dialect: 'sqlite',
    forUpdate: '',
    all<Row>(sql: string, params: readonly SqlValue[] = []) {
      return retryBusy(() => prepared(sql).all(...(params as SQLInputValue[])) as Row[]);
    },
    get<Row>(sql: string, params: readonly SqlValue[] = []) {
      return retryBusy(() => prepared(sql).get(...(params as SQLInputValue[])) as Row | undefined);
    },
    run(sql, params = []) {
      return retryBusy(() => Number(prepared(sql).run(...(params as SQLInputValue[])).changes));
    },
  };

  // The tail of the queue: every call starts after the transaction before it settled. node:sqlite runs on this
  // thread, and a settled promise's continuation runs before any timer: a burst of calls (200 members asking at
  // once, 200 reservations) would run as one unbroken task and hold every playing stream's next packet until the
  // last one committed. So a call that would extend a task already past SLICE_MS waits for the loop's next turn.
  let tail: Promise<unknown> = ready;
  let sliceStartedAt = 0;
  let sliceOpen = false;
  const pace = (): Promise<void> | undefined => {
    if (!sliceOpen) {
      sliceOpen = true;
      sliceStartedAt = performance.now();
      // Runs once the loop has had its turn: the next call starts a new slice.
      setImmediate(() => {
        sliceOpen = false;
      });
      return undefined;
    }
    return performance.now() - sliceStartedAt > SLICE_MS ? nextTurn() : undefined;
  };
  const queued = <T>(work: () => Promise<T>): Promise<T> => {
    const result = tail.then(pace).then(work);
    tail = result.catch(() => {});
    return result;
  };

  // Writes (a statement outside a transaction, or a transaction) one after another, in the order they were asked
  // for: one waiting for the file's write lock holds back the writes after it, not the reads.
  let writes: Promise<unknown> = ready;
  /**
   * Runs `attempt` (a write) in the queue once the writes before it are done. When it returns BUSY (it opened no
   * transaction: another connection holds the write lock), it waits a few milliseconds outside the queue and
   * tries again, for at most BUSY_LIMIT_MS.
   */
  const write = <T>(attempt: (mayWait: () => boolean) => Promise<T | typeof BUSY>): Promise<T> => {
    const run = async (): Promise<T> => {
      const started = Date.now();
      const mayWait = () => Date.now() - started <= BUSY_LIMIT_MS;
      for (;;) {
        const outcome = await queued(() => attempt(mayWait));
        if (outcome !== BUSY) return outcome;
        await busyPause();
      }
    };
    const result = writes.then(run, run);
    writes = result.catch(() => {});
    return result;
  };
  /** `attempt()`, or BUSY when it failed for the write lock and there is time left to wait for it. */
  const orBusy = <T>(attempt: () => T, mayWait: () => boolean): T | typeof BUSY => {
    try {
      return attempt();
    } catch (error) {
      if (isBusy(error) && mayWait()) return BUSY;
      throw error;
    }
  };

  const transaction = <T>(work: (tx: Queryable) => Promise<T>): Promise<T> =>
    write(async (mayWait) => {
      // IMMEDIATE takes the write lock now, so every read in `work` sees what no other writer can change.
      if (orBusy(() => db.exec('BEGIN IMMEDIATE'), mayWait) === BUSY) return BUSY;
      try {
        const result = await work(direct);
        db.exec('COMMIT');
        return result;
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      }
    });

  return {
    dialect: 'sqlite',
    forUpdate: '',
    all: (sql, params) => queued(() => direct.all(sql, params)),
    get: (sql, params) => queued(() => direct.get(sql, params)),
    run: (sql, params = []) =>
      write(async (mayWait) =>
        orBusy(() => Number(prepared(sql).run(...(params as SQLInputValue[])).changes), mayWait),
      ),
    transaction,
    async migrate(component: string, migrations: Migrations) {
      const list = migrations.sqlite;
      // Every start but the first after an upgrade finds the migrations applied: a read says so (WAL never blocks
      // it), where the transaction below takes the write lock and, with every shard process starting at once,
      // queues each of them behind the others for each component.
      const applied = await queued(() =>
        direct.get<{ version: number }>('SELECT version FROM schema_migrations WHERE component = $1', [
          component,
        ]),
      );
      if (applied?.version === list.length) return;
      // BEGIN IMMEDIATE before reading the version: a second process starting now waits, then sees it.
      await transaction(async (tx) => {
        const row = await tx.get<{ version: number }>(
          'SELECT version FROM schema_migrations WHERE component = $1',
          [component],
        );
        const current = row?.version ?? 0;
        if (current > list.length) throw newerSchemaError(component, current);
        for (let version = current; version < list.length; version++) db.exec(list[version] ?? '');
        if (current < list.length) {
          await tx.run(
            `INSERT INTO schema_migrations (component, version) VALUES ($1, $2)
             ON CONFLICT (component) DO UPDATE SET version = excluded.version`,
            [component, list.length],
          );
        }
      });
    },
    async close() {
      await writes;
      await tail;
      if (db.isOpen) db.close();
    },
  };
}
