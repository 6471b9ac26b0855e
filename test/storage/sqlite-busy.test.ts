/**
 * Several shard processes share one SQLite file: while another connection holds the file's write lock, this
 * connection's writes wait for it (retrying, without blocking the thread), its reads do not.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { openSqliteDatabase } from '../../src/storage/sqlite/database.ts';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('reads on while its writes wait for another process’s write lock, and keeps the writes in order', async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-busy-'));
  const path = join(dir, 'herald.sqlite');
  const db = openSqliteDatabase(path);
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  // Another shard process, in the middle of its own transaction.
  const other = new DatabaseSync(path);
  other.exec('PRAGMA busy_timeout = 0; BEGIN IMMEDIATE');
  try {
    const done: string[] = [];
    const writes = [
      db.run(`INSERT INTO t (k, v) VALUES (1, 'a')`).then(() => done.push('insert 1')),
      db
        .transaction(async (tx) => {
          await tx.run(`INSERT INTO t (k, v) VALUES (2, 'b')`);
        })
        .then(() => done.push('transaction 2')),
      db.run(`UPDATE t SET v = 'c' WHERE k = 1`).then(() => done.push('update 1')),
    ];
    const read = await Promise.race([
      db.get<{ n: number }>('SELECT count(*) AS n FROM t'),
      sleep(1_000).then(() => 'still waiting after 1 s'),
    ]);
    expect(read).toEqual({ n: 0 });
    expect(done).toEqual([]);
    other.exec('COMMIT');
    await Promise.all(writes);
    expect(done).toEqual(['insert 1', 'transaction 2', 'update 1']);
    expect(await db.all('SELECT k, v FROM t ORDER BY k')).toEqual([
      { k: 1, v: 'c' },
      { k: 2, v: 'b' },
    ]);
  } finally {
    if (other.isTransaction) other.exec('ROLLBACK');
    other.close();
    await db.close();
  }
});

it('finds its migrations applied without waiting for another process’s write lock', async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-busy-'));
  const path = join(dir, 'herald.sqlite');
  const migrations = { sqlite: ['CREATE TABLE m (k INTEGER)'], postgres: [] };
  const first = openSqliteDatabase(path);
  await first.migrate('component', migrations);
  await first.close();
  // Every shard process starting at once: another one holds the write lock while this one opens.
  const db = openSqliteDatabase(path);
  const other = new DatabaseSync(path);
  other.exec('PRAGMA busy_timeout = 0; BEGIN IMMEDIATE');
  try {
    const migrated = await Promise.race([
      db.migrate('component', migrations).then(() => 'migrated'),
      sleep(1_000).then(() => 'still waiting for the write lock after 1 s'),
    ]);
    expect(migrated).toBe('migrated');
    // A component behind its migrations still takes the lock, and so waits for the other process.
    const behind = db.migrate('another', { sqlite: ['CREATE TABLE a (k INTEGER)'], postgres: [] });
    const waited = await Promise.race([behind.then(() => 'migrated'), sleep(200).then(() => 'waiting')]);
    expect(waited).toBe('waiting');
    other.exec('COMMIT');
    await behind;
    expect(await db.all('SELECT k FROM a')).toEqual([]);
  } finally {
    if (other.isTransaction) other.exec('ROLLBACK');
    other.close();
    await db.close();
  }
});
