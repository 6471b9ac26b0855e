/**
 * The PostgreSQL pool's own bounds. Connecting needs no cluster: a server that accepts connections and never answers
 * (a listener on loopback that holds every socket) stands for a host that drops packets. Statements need one: the
 * test cluster behind a proxy that can drop its connections.
 */
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import {
  type Database,
  DEFAULT_CONNECT_TIMEOUT_MS,
  type OpenDatabaseOptions,
  openDatabase,
} from '../../src/storage/index.ts';
import {
  type FreezableProxy,
  type SilentServer,
  startFreezableProxy,
  startSilentServer,
} from '../support/net.ts';
import { createDatabase } from '../support/postgres.ts';

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
  options: OpenDatabaseOptions = {},
  poolSize = 1,
): Promise<{ db: Database; proxy: FreezableProxy }> {
  const url = await freshDatabase();
  const direct = new URL(url);
  const proxy = await startFreezableProxy({ host: direct.hostname, port: Number(direct.port) });
  proxies.push(proxy);
  const through = new URL(url);
  through.port = String(proxy.port);
  const db = openDatabase({ kind: 'postgres', url: through.toString(), poolSize }, options);
  opened.push(db);
  return { db, proxy };
}

const describePostgres = 'url' in cluster ? describe : describe.skip;

describePostgres(
  `the pool on a host that drops connections${'skipped' in cluster ? ` — skipped: ${cluster.skipped}` : ''}`,
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
  },
);
