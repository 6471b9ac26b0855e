/**
 * A SQLite connection commits the writes queued together in one transaction (a group), each in a savepoint of its
 * own: a burst of reservations from several shard processes on one file takes one turn at the write lock per group
 * rather than one per call, and each call still succeeds or fails on its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { openSqliteDatabase } from '../../src/storage/sqlite/database.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'herald-group-commit-'));
});
afterEach(() => {
  vi.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

it('takes the write lock once for a burst of transactions, not once for each', async () => {
  const db = openSqliteDatabase(join(dir, 'h.sqlite'));
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY)');
  const exec = vi.spyOn(DatabaseSync.prototype, 'exec');
  await Promise.all(
    Array.from({ length: 50 }, (_, k) =>
      db.transaction(async (tx) => {
        await tx.get('SELECT COUNT(*) AS n FROM t');
        await tx.run('INSERT INTO t (k) VALUES ($1)', [k]);
      }),
    ),
  );
  const begins = exec.mock.calls.filter(([sql]) => sql === 'BEGIN IMMEDIATE').length;
  expect(await db.get('SELECT COUNT(*) AS n FROM t')).toEqual({ n: 50 });
  // Fifty small transactions fit in one slice of the queue; each used to begin and commit its own.
  expect(begins).toBeGreaterThanOrEqual(1);
  expect(begins).toBeLessThan(5);
  await db.close();
});

it('undoes a transaction that fails within a group alone, and commits the others', async () => {
  const db = openSqliteDatabase(join(dir, 'h.sqlite'));
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY)');
  const outcomes = await Promise.allSettled([
    db.transaction((tx) => tx.run('INSERT INTO t (k) VALUES (1)')),
    db.transaction(async (tx) => {
      await tx.run('INSERT INTO t (k) VALUES (2)');
      throw new Error('refused after writing');
    }),
    // A statement that fails on its own: a duplicate key.
    db.run('INSERT INTO t (k) VALUES (1)'),
    db.transaction((tx) => tx.run('INSERT INTO t (k) VALUES (3)')),
  ]);
  expect(outcomes.map((outcome) => outcome.status)).toEqual([
    'fulfilled',
    'rejected',
    'rejected',
    'fulfilled',
  ]);
  expect((outcomes[1] as PromiseRejectedResult).reason).toEqual(new Error('refused after writing'));
  expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
  expect(await db.all('SELECT k FROM t ORDER BY k')).toEqual([{ k: 1 }, { k: 3 }]);
  await db.close();
});

it('settles a write only once it is committed: another connection already sees it', async () => {
  const path = join(dir, 'h.sqlite');
  const db = openSqliteDatabase(path);
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY)');
  const other = new DatabaseSync(path);
  const seenByOther: boolean[] = [];
  await Promise.all(
    Array.from({ length: 20 }, (_, k) =>
      db
        .transaction((tx) => tx.run('INSERT INTO t (k) VALUES ($1)', [k]))
        .then(() => {
          seenByOther.push(other.prepare('SELECT 1 FROM t WHERE k = ?').get(k) !== undefined);
        }),
    ),
  );
  expect(seenByOther).toEqual(Array.from({ length: 20 }, () => true));
  other.close();
  await db.close();
});

it('keeps every write of two connections bursting on one file at once', async () => {
  const path = join(dir, 'h.sqlite');
  const first = openSqliteDatabase(path);
  await first.run('CREATE TABLE t (k INTEGER PRIMARY KEY, who TEXT NOT NULL)');
  const second = openSqliteDatabase(path);
  const burst = (db: typeof first, who: string, from: number) =>
    Array.from({ length: 100 }, (_, k) =>
      db.transaction(async (tx) => {
        const before = await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM t');
        await tx.run('INSERT INTO t (k, who) VALUES ($1, $2)', [from + k, who]);
        return before?.n ?? 0;
      }),
    );
  const counts = await Promise.all([...burst(first, 'a', 0), ...burst(second, 'b', 1_000)]);
  expect(await first.get('SELECT COUNT(*) AS n FROM t')).toEqual({ n: 200 });
  // Every transaction saw the database as the ones committed before it left it: 200 different counts.
  expect(new Set(counts).size).toBe(200);
  await second.close();
  await first.close();
});

it('lets a read queued behind writes see them', async () => {
  const db = openSqliteDatabase(':memory:');
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY)');
  const [, , count] = await Promise.all([
    db.run('INSERT INTO t (k) VALUES (1)'),
    db.transaction((tx) => tx.run('INSERT INTO t (k) VALUES (2)')),
    db.get<{ n: number }>('SELECT COUNT(*) AS n FROM t'),
  ]);
  expect(count).toEqual({ n: 2 });
  await db.close();
});
