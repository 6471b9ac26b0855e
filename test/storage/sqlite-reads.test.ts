/**
 * A read on the SQLite connection runs at once, ahead of the writes queued before it, as a read on another
 * connection would: when 1,000 members ask at once, the reads behind each answer do not wait for every reservation
 * queued before them. It still waits while a transaction is open (it would see what is not committed) and while a
 * migration is pending (its table may not exist yet).
 */
import { setImmediate as tick } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { openSqliteDatabase } from '../../src/storage/sqlite/database.ts';

const count = async (db: ReturnType<typeof openSqliteDatabase>): Promise<number> =>
  ((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')) as { n: number }).n;

it('answers a read before the writes queued ahead of it, with what is committed', async () => {
  const db = openSqliteDatabase(':memory:');
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY)');
  const writes = Array.from({ length: 50 }, (_, k) =>
    db.transaction(async (tx) => {
      await tx.run('INSERT INTO t (k) VALUES ($1)', [k]);
    }),
  );
  expect(await count(db)).toBe(0);
  await Promise.all(writes);
  // A caller that awaited its writes reads them back.
  expect(await count(db)).toBe(50);
  await db.close();
});

it('holds a read while a transaction is open, and then it sees the commit', async () => {
  const db = openSqliteDatabase(':memory:');
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY)');
  let release = (): void => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const writing = db.transaction(async (tx) => {
    await tx.run('INSERT INTO t (k) VALUES (1)');
    await gate;
  });
  await tick();
  let read: number | undefined;
  const reading = count(db).then((n) => {
    read = n;
  });
  for (let i = 0; i < 5; i++) await tick();
  // The row is written but not committed: the read has not been answered.
  expect(read).toBeUndefined();
  release();
  await Promise.all([writing, reading]);
  expect(read).toBe(1);
  await db.close();
});

it('holds a read until a pending migration has made its table', async () => {
  const db = openSqliteDatabase(':memory:');
  await db.get('SELECT 1 AS one');
  const migrated = db.migrate('reads-test', {
    sqlite: ['CREATE TABLE t (k INTEGER PRIMARY KEY)'],
    postgres: [],
  });
  expect(await count(db)).toBe(0);
  await migrated;
  await db.close();
});
