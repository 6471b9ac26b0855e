/**
 * What the SQLite database's durability settings promise: WAL with synchronous=NORMAL (no fsync on the event loop for
 * each commit), and a committed row survives `kill -9` of the process that wrote it (only an OS crash or power loss
 * can lose the last commits, which a test cannot stage).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../../src/storage/sqlite/database.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const SQLITE_MODULE = join(import.meta.dirname, '..', '..', 'src', 'storage', 'sqlite', 'database.ts');

describe('SQLite durability', () => {
  it('commits to the WAL without a full sync', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-wal-'));
    dirs.push(dir);
    const db = openSqliteDatabase(join(dir, 'herald.sqlite'));
    expect(await db.get('PRAGMA journal_mode')).toEqual({ journal_mode: 'wal' });
    // 1 = NORMAL, 2 = FULL.
    expect(await db.get('PRAGMA synchronous')).toEqual({ synchronous: 1 });
    await db.close();
  });

  it('keeps a committed charge when the process is killed with SIGKILL right after the commit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-kill-'));
    dirs.push(dir);
    const path = join(dir, 'herald.sqlite');
    // The child commits one row, says so, and then hangs until it is killed: no close, no checkpoint.
    const script = `
      const { openSqliteDatabase } = await import(${JSON.stringify(SQLITE_MODULE)});
      const db = openSqliteDatabase(${JSON.stringify(path)});
      await db.run('CREATE TABLE charges (id INTEGER PRIMARY KEY, cost_nano INTEGER NOT NULL)');
      await db.run('INSERT INTO charges (cost_nano) VALUES ($1)', [123456789]);
      process.stdout.write('committed\\n');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('committed')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`child exited early with ${code}`)));
    });
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    const [, signal] = await exited;
    expect(signal).toBe('SIGKILL');

    const db = openSqliteDatabase(path);
    expect(await db.all('SELECT cost_nano FROM charges')).toEqual([{ cost_nano: 123456789 }]);
    await db.close();
  });
});
