/**
 * node:sqlite runs on the event loop's thread: a burst of calls (hundreds of members asking at once) must not run
 * as one unbroken task, or every playing stream's next voice packet waits for the last of them.
 */
import { expect, it } from 'vitest';
import { openSqliteDatabase } from '../../src/storage/sqlite/database.ts';
import { busy } from '../support/busy.ts';

it('lets a due timer run in the middle of a burst of transactions', async () => {
  const db = openSqliteDatabase(':memory:');
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY)');
  let committed = 0;
  let committedWhenTimerRan: number | undefined;
  setTimeout(() => {
    committedWhenTimerRan = committed;
  }, 0);
  await Promise.all(
    Array.from({ length: 40 }, (_, k) =>
      db.transaction(async (tx) => {
        await tx.run('INSERT INTO t (k) VALUES ($1)', [k]);
        busy(1);
        committed++;
      }),
    ),
  );
  expect(committed).toBe(40);
  expect(committedWhenTimerRan).toBeDefined();
  expect(committedWhenTimerRan).toBeLessThan(40);
  await db.close();
});

it('runs a lone call without waiting for a turn of the loop', async () => {
  const db = openSqliteDatabase(':memory:');
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY)');
  // A call made after the loop has been idle starts at once: before an immediate queued just before it.
  await new Promise((resolve) => setTimeout(resolve, 5));
  const order: string[] = [];
  setImmediate(() => order.push('immediate'));
  await db.run('INSERT INTO t (k) VALUES (1)').then(() => order.push('insert'));
  await new Promise((resolve) => setImmediate(resolve));
  expect(order).toEqual(['insert', 'immediate']);
  await db.close();
});
