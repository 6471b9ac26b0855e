/**
 * The PostgreSQL pool's own bounds. Connecting needs no cluster: a server that accepts connections and never answers
 * (a listener on loopback that holds every socket) stands for a host that drops packets. Statements need one: the
 * test cluster behind a proxy that goes silent once connections are made, as a partitioned or frozen host does.
 */
import pg from 'pg';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { budgetedSynthesize } from '../../src/budget/index.ts';
import { describeFailure } from '../../src/discord/replies.ts';
import type { LogFields, Logger } from '../../src/log.ts';
import {
  type Database,
  DatabaseTimeoutError,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  type OpenDatabaseOptions,
  openDatabase,
} from '../../src/storage/index.ts';
import type { GenerateResult } from '../../src/tts/index.ts';
import type { SpeechRequest } from '../../src/voice/session.ts';
import { makeGuard } from '../budget/helpers.ts';
import {
  type FreezableProxy,
  type SilentServer,
  startFreezableProxy,
  startSilentServer,
} from '../support/net.ts';
import { createDatabase } from '../support/postgres.ts';
import { until } from '../support/until.ts';

/** A few turns of the event loop (setImmediate is not faked here). */
const turns = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

let silent: SilentServer | undefined;
let db: Database | undefined;
afterEach(async () => {
  vi.useRealTimers();
  // The listener first: the pool's connection ends with it, and only then can the pool close.
  await silent?.close();
  await db?.close();
  silent = undefined;
  db = undefined;
});

it('fails a statement when no connection is ready within the default connect timeout, unasked', async () => {
  silent = await startSilentServer();
  db = openDatabase({
    kind: 'postgres',
    url: `postgres://herald@127.0.0.1:${silent.port}/herald`,
    poolSize: 1,
  });
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  let settled = false;
  const statement = db.get('SELECT 1').finally(() => {
    settled = true;
  });
  statement.catch(() => {});
  await silent.accepted();
  await vi.advanceTimersByTimeAsync(DEFAULT_CONNECT_TIMEOUT_MS - 1);
  expect(settled).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  // The pool ends the connection on its timer; the socket's close arrives on the next turns of the event loop.
  await turns();
  expect(settled).toBe(true);
  await expect(statement).rejects.toThrow(/connection timeout/);
});

it('takes a shorter connect timeout when asked (the doctor’s)', async () => {
  silent = await startSilentServer();
  db = openDatabase(
    { kind: 'postgres', url: `postgres://herald@127.0.0.1:${silent.port}/herald`, poolSize: 1 },
    { connectTimeoutMs: 500 },
  );
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  let settled = false;
  const statement = db.get('SELECT 1').finally(() => {
    settled = true;
  });
  statement.catch(() => {});
  await silent.accepted();
  await vi.advanceTimersByTimeAsync(500);
  await turns();
  expect(settled).toBe(true);
  await expect(statement).rejects.toThrow(/connection timeout/);
});

const cluster = inject('postgres');

/** In every proxied URL; trust authentication never asks for it, and no error may show it. */
const PASSWORD = 'never-in-an-error-8c41';
/** Small, so the tests run quickly; nothing asserts how long anything took. */
const TIMEOUT_MS = 300;

const proxies: FreezableProxy[] = [];
const opened: Database[] = [];
afterEach(async () => {
  vi.useRealTimers();
  // The proxies first: their connections end, and the pools close without waiting on a silent host.
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  await Promise.all(opened.splice(0).map((database) => database.close()));
});

/** The URL of a fresh database on the test cluster. */
async function freshDatabase(): Promise<string> {
  if (!('url' in cluster)) throw new Error(cluster.skipped);
  return createDatabase(cluster.url);
}

/** A fresh database on the test cluster, reached through a proxy that can go silent. */
async function proxied(
  options: OpenDatabaseOptions = { statementTimeoutMs: TIMEOUT_MS },
  poolSize = 1,
): Promise<{ db: Database; proxy: FreezableProxy; url: string }> {
  const url = await freshDatabase();
  const direct = new URL(url);
  const proxy = await startFreezableProxy({ host: direct.hostname, port: Number(direct.port) });
  proxies.push(proxy);
  const through = new URL(url);
  through.port = String(proxy.port);
  through.password = PASSWORD;
  const db = openDatabase({ kind: 'postgres', url: through.toString(), poolSize }, options);
  opened.push(db);
  return { db, proxy, url };
}

/** Waits for the proxy to see `count` connections closed by the pool: a destroyed client, not one kept. */
const closedByPool = (proxy: FreezableProxy, count = 1): Promise<true> =>
  until(`${count} connection(s) closed by the pool`, async () =>
    proxy.closedByClient >= count ? true : undefined,
  );

const describePostgres = 'url' in cluster ? describe : describe.skip;

describePostgres(
  `the pool on a host that goes silent or drops connections${'skipped' in cluster ? ` — skipped: ${cluster.skipped}` : ''}`,
  () => {
    it('fails a transaction whose connection drops, with no uncaught error', async () => {
      const { db, proxy } = await proxied();
      const failure = await db
        .transaction(async (tx) => {
          await tx.get('SELECT 1');
          // Reset both ways, as a restarted server or a dropped NAT entry would.
          await proxy.close();
          return tx.get('SELECT 2');
        })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(Error);
      // Where an unheard 'error' on the client would surface, as an uncaught exception.
      await turns();
    });

    it('fails a statement the host never answers with a sentence that says so, without the password', async () => {
      const { db, proxy } = await proxied();
      await db.get('SELECT 1');
      proxy.freeze();
      const failure = await db.get('SELECT 2').catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DatabaseTimeoutError);
      expect(failure).toMatchObject({ code: 'DATABASE_TIMEOUT', timeoutMs: TIMEOUT_MS });
      const error = failure as DatabaseTimeoutError;
      expect(error.message).toBe(
        'PostgreSQL did not answer a statement within 300 ms (statement timeout): the database host may be ' +
          'unreachable or stalled. Its connection was closed; the next statement opens a new one.',
      );
      for (const text of [error.message, String(error), error.stack ?? '', String(error.cause)]) {
        expect(text).not.toContain(PASSWORD);
      }
    });

    it('closes the connection of a statement that timed out, and answers the next on a fresh one', async () => {
      const { db, proxy } = await proxied();
      await db.get('SELECT 1');
      proxy.freeze();
      await expect(db.get('SELECT 2')).rejects.toBeInstanceOf(DatabaseTimeoutError);
      await closedByPool(proxy);
      proxy.thaw();
      // The one connection the pool may open was given back: the answer is on a second connection.
      expect(await db.get<{ n: number }>('SELECT 3 AS n')).toEqual({ n: 3 });
      expect(proxy.accepted).toBe(2);
    });

    it('fails a transaction in progress when the host goes silent, commits nothing and keeps no broken client', async () => {
      const { db, proxy } = await proxied();
      await db.run('CREATE TABLE notes (id INTEGER PRIMARY KEY)');
      const failure = await db
        .transaction(async (tx) => {
          await tx.run('INSERT INTO notes (id) VALUES (1)');
          proxy.freeze();
          return tx.all('SELECT id FROM notes');
        })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DatabaseTimeoutError);
      await closedByPool(proxy);
      proxy.thaw();
      // One connection in the pool: this transaction runs only if the broken client was destroyed, not kept.
      await db.transaction(async (tx) => {
        expect(await tx.all('SELECT id FROM notes')).toEqual([]);
        await tx.run('INSERT INTO notes (id) VALUES (1)');
      });
      expect(await db.all('SELECT id FROM notes')).toEqual([{ id: 1 }]);
    });

    it('frees the locks of a transaction whose process went silent, for the next process, within its bound', async () => {
      const { db, proxy, url } = await proxied();
      await db.run('CREATE TABLE notes (id INTEGER PRIMARY KEY, said TEXT NOT NULL)');
      await db.run(`INSERT INTO notes (id, said) VALUES (1, 'before')`);
      // A second process, straight to the cluster, whose own bound is far longer than the first one's.
      const other = openDatabase({ kind: 'postgres', url, poolSize: 1 }, { statementTimeoutMs: 5_000 });
      opened.push(other);
      const cutOff = db
        .transaction(async (tx) => {
          await tx.get('SELECT said FROM notes WHERE id = 1 FOR UPDATE');
          proxy.freeze();
          return tx.run(`UPDATE notes SET said = 'lost' WHERE id = 1`);
        })
        .catch((error: unknown) => error);
      // The first process's row lock is held on the server until that session ends.
      await other.run(`UPDATE notes SET said = 'after' WHERE id = 1`);
      expect(await cutOff).toBeInstanceOf(DatabaseTimeoutError);
      expect(await other.get('SELECT said FROM notes WHERE id = 1')).toEqual({ said: 'after' });
    });

    it('does not bound migrations: one waits on another’s advisory lock far longer than the statement timeout', async () => {
      const url = await freshDatabase();
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        await holder.query('SELECT pg_advisory_lock(42)');
        const open = (): Database => {
          const db = openDatabase({ kind: 'postgres', url, poolSize: 1 }, { statementTimeoutMs: TIMEOUT_MS });
          opened.push(db);
          return db;
        };
        const waiting = async (count: number): Promise<true> =>
          until(`${count} advisory lock waits`, async () => {
            const { rows } = await holder.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            );
            return (rows[0]?.n ?? 0) >= count ? true : undefined;
          });
        // The first migration takes Herald's migration lock, then waits for the lock this test holds.
        const first = open().migrate('first', {
          sqlite: ['SELECT 1'],
          postgres: ['SELECT pg_advisory_xact_lock(42)'],
        });
        await waiting(1);
        // The second (another process, as it were) waits on the migration lock the first holds.
        const second = open().migrate('second', {
          sqlite: ['SELECT 1'],
          postgres: ['CREATE TABLE second_done (id INTEGER)'],
        });
        await waiting(2);
        // Both wait past many statement timeouts (a bounded wait would have failed by now), then go through.
        await new Promise((resolve) => setTimeout(resolve, 4 * TIMEOUT_MS));
        await holder.query('SELECT pg_advisory_unlock(42)');
        expect(await Promise.allSettled([first, second])).toEqual([
          { status: 'fulfilled', value: undefined },
          { status: 'fulfilled', value: undefined },
        ]);
        expect((await holder.query('SELECT id FROM second_done')).rows).toEqual([]);
      } finally {
        await holder.end();
      }
    });

    it('destroys a connection still being opened when the database closes', async () => {
      const { db, proxy } = await proxied({ statementTimeoutMs: TIMEOUT_MS, connectTimeoutMs: 60_000 });
      proxy.freeze();
      const statement = db.get('SELECT 1');
      statement.catch(() => {});
      await until('the connection', async () => (proxy.accepted === 1 ? true : undefined));
      await db.close();
      await closedByPool(proxy);
      await expect(statement).rejects.toThrow();
    });

    it('fails a migration still waiting on a silent host when it closes, with no uncaught error, and closes again', async () => {
      const { db, proxy } = await proxied();
      await db.get('SELECT 1');
      proxy.freeze();
      // Unbounded: it waits for the migration lock's answer until the close destroys its connection.
      const migration = db.migrate('stuck', { sqlite: ['SELECT 1'], postgres: ['SELECT 1'] });
      migration.catch(() => {});
      // The pool hands its idle connection over on a later tick; a close before that would find it idle.
      await turns();
      await db.close();
      await expect(migration).rejects.toThrow();
      await closedByPool(proxy);
      await db.close();
    });

    it('bounds statements by the default timeout, unasked', async () => {
      const { db, proxy } = await proxied({});
      await db.get('SELECT 1');
      proxy.freeze();
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      let settled = false;
      const statement = db.get('SELECT 2').finally(() => {
        settled = true;
      });
      statement.catch(() => {});
      await vi.advanceTimersByTimeAsync(DEFAULT_STATEMENT_TIMEOUT_MS - 1);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await turns();
      expect(settled).toBe(true);
      await expect(statement).rejects.toBeInstanceOf(DatabaseTimeoutError);
    });

    it('fails a member’s speech closed: no reservation, no synthesis, an answer that says the database is not answering', async () => {
      const { db, proxy } = await proxied();
      const { guard } = await makeGuard({
        target: { open: () => db },
        account: { balanceUsd: 5, balanceSeenAt: 0 },
        pricePerCharUsd: 0.0001,
      });
      let generated = 0;
      const { synthesize } = budgetedSynthesize(guard, async (): Promise<GenerateResult> => {
        generated += 1;
        throw new Error('the service must not be asked');
      });
      proxy.freeze();
      const failure = await synthesize(SPEECH, new AbortController().signal, 'g1').catch(
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(DatabaseTimeoutError);
      expect(generated).toBe(0);
      // What the member reads, and the operator's log line that explains it.
      const logged: { message: string; fields: LogFields | undefined }[] = [];
      const answer = describeFailure(failure, recordingLogger(logged));
      expect(answer).toBe(
        'Herald’s database is not answering right now, so this did not go through. Try again in a moment.',
      );
      expect(logged).toEqual([
        { message: 'the database did not answer in time', fields: expect.objectContaining({ err: failure }) },
      ]);
      proxy.thaw();
      expect(await guard.status()).toMatchObject({ inFlight: 0, reservedUsd: 0, balanceUsd: 5 });
    });
  },
);

const SPEECH: SpeechRequest = {
  text: 'hello',
  speaker: { id: 'speaker-1', name: 'Bella', voiceKey: 'af_bella', gender: null, languages: null },
  requestedBy: { id: 'm1', name: 'm1' },
  onFailure: () => {},
};

/** A {@link Logger} that keeps its error lines. */
function recordingLogger(lines: { message: string; fields: LogFields | undefined }[]): Logger {
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (message, fields) => lines.push({ message, fields }),
    child: () => logger,
  };
  return logger;
}
