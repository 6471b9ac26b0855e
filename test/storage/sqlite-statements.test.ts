/**
 * The SQLite connection compiles each statement once and reuses it: compiling it again on every call was most of
 * SQLite's CPU on the event loop while hundreds of utterances were reserved and settled.
 */
import { DatabaseSync } from 'node:sqlite';
import { afterEach, expect, it, vi } from 'vitest';
import { openSqliteDatabase } from '../../src/storage/sqlite/database.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

it('compiles a statement once however often it runs, with each call its own parameters', async () => {
  const db = openSqliteDatabase(':memory:');
  await db.run('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  const prepare = vi.spyOn(DatabaseSync.prototype, 'prepare');
  for (let k = 0; k < 50; k++) await db.run('INSERT INTO t (k, v) VALUES ($1, $2)', [k, `v${k}`]);
  const rows = await Promise.all(
    [3, 30, 49].map((k) => db.get<{ v: string }>('SELECT v FROM t WHERE k = $1', [k])),
  );
  expect(rows.map((row) => row?.v)).toEqual(['v3', 'v30', 'v49']);
  expect(prepare).toHaveBeenCalledTimes(2);
  await db.close();
});

it('a statement kept from before a migration sees the new schema (SQLite compiles it again)', async () => {
  const db = openSqliteDatabase(':memory:');
  await db.migrate('t', { sqlite: ['CREATE TABLE t (v TEXT)'], postgres: [] });
  await db.run("INSERT INTO t (v) VALUES ('a')");
  expect(await db.all('SELECT * FROM t')).toEqual([{ v: 'a' }]);
  await db.migrate('t', {
    sqlite: ['CREATE TABLE t (v TEXT)', 'ALTER TABLE t ADD COLUMN w TEXT'],
    postgres: [],
  });
  expect(await db.all('SELECT * FROM t')).toEqual([{ v: 'a', w: null }]);
  await db.close();
});
