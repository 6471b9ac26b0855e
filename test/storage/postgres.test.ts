/**
 * The PostgreSQL pool's own bounds, which need no cluster: a server that accepts connections and never answers
 * (a listener on loopback that holds every socket) stands for a host that drops packets.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { type Database, DEFAULT_CONNECT_TIMEOUT_MS, openDatabase } from '../../src/storage/index.ts';
import { type SilentServer, startSilentServer } from '../support/net.ts';

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
