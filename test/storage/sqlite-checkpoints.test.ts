/**
 * Shard processes under a manager leave the SQLite log's checkpoints to the manager: their own commits never copy
 * the log into the database file below the backstop, and the manager's timer does.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { openDatabase, startCheckpointsFor } from '../../src/storage/index.ts';
import { BACKSTOP_AUTOCHECKPOINT_PAGES, startWalCheckpoints } from '../../src/storage/sqlite/checkpoints.ts';
import { openSqliteDatabase } from '../../src/storage/sqlite/database.ts';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const freshPath = (): string => {
  dir = mkdtempSync(join(tmpdir(), 'herald-checkpoints-'));
  return join(dir, 'herald.sqlite');
};

/** Some 1,500 pages of log in commits of a few pages each, as the shards write (SQLite's own trigger is 1,000). */
async function writePages(db: ReturnType<typeof openSqliteDatabase>): Promise<void> {
  await db.run('CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  for (let i = 0; i < 500; i++) {
    await db.transaction(async (tx) => {
      await tx.run('INSERT INTO t (v) VALUES ($1)', ['x'.repeat(3_000)]);
      await tx.run('INSERT INTO t (v) VALUES ($1)', ['y'.repeat(3_000)]);
    });
  }
}

const fileBytes = (path: string): number => statSync(path).size;

it('checkpoints in its own commits by default, as SQLite does', async () => {
  const path = freshPath();
  const db = openSqliteDatabase(path);
  try {
    await writePages(db);
    // The log passed 1,000 pages: a commit copied them into the database file.
    expect(fileBytes(path)).toBeGreaterThan(1_000_000);
  } finally {
    await db.close();
  }
});

it('leaves the checkpoints elsewhere below the backstop, and the manager’s timer makes them', async () => {
  expect(BACKSTOP_AUTOCHECKPOINT_PAGES).toBeGreaterThan(1_500);
  const path = freshPath();
  const db = openSqliteDatabase(path, { walCheckpoints: 'elsewhere' });
  try {
    await writePages(db);
    // Every page is still in the log: no commit of this connection copied them.
    expect(fileBytes(path)).toBeLessThan(100_000);
    expect(fileBytes(`${path}-wal`)).toBeGreaterThan(4_000_000);

    const manager = startWalCheckpoints(path, {
      intervalMs: 20,
      onError: (error) => expect.fail(String(error)),
    });
    try {
      const deadline = Date.now() + 5_000;
      while (fileBytes(path) < 4_000_000 && Date.now() < deadline) await sleep(20);
      expect(fileBytes(path)).toBeGreaterThan(4_000_000);
      // Nothing left to copy: the next checkpoint finds the whole log in the file.
      const outcome = manager.checkpointNow();
      expect(outcome.busy).toBe(false);
      expect(outcome.checkpointedPages).toBe(outcome.logPages);
      // The shard's data is whole from another connection.
      const other = openSqliteDatabase(path);
      expect(await other.get<{ n: number }>('SELECT count(*) AS n FROM t')).toEqual({ n: 1_000 });
      await other.close();
    } finally {
      manager.stop();
      manager.stop();
    }
  } finally {
    await db.close();
  }
});

it('has no log to checkpoint for PostgreSQL or a database in memory', () => {
  const onError = () => expect.fail('no checkpoint runs');
  expect(startCheckpointsFor({ kind: 'sqlite', path: ':memory:' }, onError)).toBeUndefined();
  expect(
    startCheckpointsFor({ kind: 'postgres', url: 'postgres://127.0.0.1:1/x', poolSize: 1 }, onError),
  ).toBe(undefined);
});

it('passes the choice through openDatabase', async () => {
  const path = freshPath();
  const db = openDatabase({ kind: 'sqlite', path }, { walCheckpoints: 'elsewhere' });
  try {
    await writePages(db);
    expect(fileBytes(path)).toBeLessThan(100_000);
  } finally {
    await db.close();
  }
});
