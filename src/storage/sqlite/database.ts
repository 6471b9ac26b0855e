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
      await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 10));
    }
  }
}

/** How a queued call ended. */
type Outcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: unknown };

/** A call waiting its turn on the connection. */
interface Job {
  /** Whether it may write: a transaction, or a statement other than a query. */
  readonly writes: boolean;
  readonly work: (q: Queryable) => Promise<unknown>;
  readonly settle: (outcome: Outcome) => void;
}

/** A query that only reads (a `SELECT`): it needs no write lock. Anything else is taken to write. */
const isRead = (sql: string): boolean => /^\s*SELECT\b/i.test(sql);

/**
 * Opens (creating folders as needed) the SQLite database at `path`, or ':memory:'. node:sqlite is synchronous,
 * so every statement runs at once; a transaction's `await`s could let another caller's statements in between,
 * so calls on this connection run one at a time, in order, and the writes among them commit in groups (see the
 * queue below). Other connections (other processes) wait for the file's write lock, retrying asynchronously.
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

  // One queue of calls per connection, run in order. node:sqlite runs on this thread, and a settled promise's
  // continuation runs before any timer: a burst of calls (200 members asking at once, 200 reservations) would run as
  // one unbroken task and hold every playing stream's next packet until the last one committed. So calls run in
  // slices of SLICE_MS, and the loop gets a turn between slices.
  //
  // Writes commit in groups: the writes of one slice (transactions and statements, with the reads between them)
  // share one BEGIN IMMEDIATE … COMMIT, each in a savepoint of its own, so one that fails is undone alone. With
  // several processes on one file, each BEGIN IMMEDIATE is a turn at the write lock that the others wait for and
  // retry (in a burst of 1,000 `/speak` on four shards, 322 retries of 2–12 ms each); a group takes one turn for
  // many. A call settles only once the group it ran in is committed, so nothing is reported written before it is.
  const jobs: Job[] = [];
  let draining: Promise<void> | undefined;
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
  const inSlice = (): boolean => performance.now() - sliceStartedAt <= SLICE_MS;
  const savepoint = (sql: string): void => {
    prepared(sql).run();
  };

  /** Runs the writes at the head of the queue, and the calls after them while the slice lasts, as one group. */
  const runGroup = async (): Promise<void> => {
    try {
      await retryBusy(() => db.exec('BEGIN IMMEDIATE'));
    } catch (error) {
      jobs.shift()?.settle({ ok: false, error });
      return;
    }
    const done: [Job, Outcome][] = [];
    let broken: unknown;
    do {
      const job = jobs.shift() as Job;
      savepoint('SAVEPOINT call');
      try {
        const value = await job.work(direct);
        savepoint('RELEASE call');
        done.push([job, { ok: true, value }]);
      } catch (error) {
        done.push([job, { ok: false, error }]);
        try {
          savepoint('ROLLBACK TO call');
          savepoint('RELEASE call');
        } catch (rollbackError) {
          broken = rollbackError;
        }
      }
    } while (broken === undefined && jobs.length > 0 && inSlice());
    try {
      if (broken !== undefined) throw broken;
      db.exec('COMMIT');
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK');
      // Nothing of the group was kept: every call in it fails, with its own error or with why.
      for (const [job, outcome] of done) job.settle(outcome.ok ? { ok: false, error } : outcome);
      return;
    }
    for (const [job, outcome] of done) job.settle(outcome);
  };

  const drain = async (): Promise<void> => {
    const failedToOpen = await ready.then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    for (;;) {
      const wait = pace();
      if (wait) await wait;
      const next = jobs[0];
      if (!next) {
        draining = undefined;
        return;
      }
      if (failedToOpen) {
        jobs.shift();
        next.settle({ ok: false, error: failedToOpen.error });
      } else if (next.writes) {
        await runGroup();
      } else {
        // A read needs no write lock: it runs alone, in SQLite's own read transaction.
        jobs.shift();
        try {
          next.settle({ ok: true, value: await next.work(direct) });
        } catch (error) {
          next.settle({ ok: false, error });
        }
      }
    }
  };

  const queued = <T>(writes: boolean, work: (q: Queryable) => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      jobs.push({
        writes,
        work,
        settle: (outcome) => (outcome.ok ? resolve(outcome.value as T) : reject(outcome.error)),
      });
      draining ??= drain();
    });

  const transaction = <T>(work: (tx: Queryable) => Promise<T>): Promise<T> => queued(true, work);

  return {
    dialect: 'sqlite',
    forUpdate: '',
    all: (sql, params) => queued(!isRead(sql), (q) => q.all(sql, params)),
    get: (sql, params) => queued(!isRead(sql), (q) => q.get(sql, params)),
    run: (sql, params) => queued(true, (q) => q.run(sql, params)),
    transaction,
    async migrate(component: string, migrations: Migrations) {
      const list = migrations.sqlite;
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
      while (draining) await draining;
      if (db.isOpen) db.close();
    },
  };
}
