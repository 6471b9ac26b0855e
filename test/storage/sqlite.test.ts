import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteSettingsStore, migrate, openSqlite } from '../../src/storage/sqlite.ts';

const dirs: string[] = [];
function tempDbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-db-'));
  dirs.push(dir);
  return join(dir, 'nested', 'herald.sqlite');
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('SQLite settings store', () => {
  it('falls back to defaults for servers and members never configured', async () => {
    const store = createSqliteSettingsStore(openSqlite(':memory:'));
    expect(await store.guild('1')).toEqual({ guildId: '1', defaultSpeakerId: null });
    expect(await store.memberSpeaker('1', '2')).toBeNull();
  });

  it('keeps settings across a reopen of the file (a restart)', async () => {
    const path = tempDbPath();
    const first = createSqliteSettingsStore(openSqlite(path));
    await first.setGuildSpeaker('g', 'speaker-a');
    await first.setMemberSpeaker('g', 'm', 'speaker-b');
    first.close();

    const second = createSqliteSettingsStore(openSqlite(path));
    expect((await second.guild('g')).defaultSpeakerId).toBe('speaker-a');
    expect(await second.memberSpeaker('g', 'm')).toBe('speaker-b');
    expect(await second.memberSpeaker('other', 'm')).toBeNull();
    second.close();
  });

  it('overwrites and clears a setting', async () => {
    const store = createSqliteSettingsStore(openSqlite(':memory:'));
    await store.setGuildSpeaker('g', 'a');
    await store.setGuildSpeaker('g', 'b');
    expect((await store.guild('g')).defaultSpeakerId).toBe('b');
    await store.setMemberSpeaker('g', 'm', 'x');
    await store.setMemberSpeaker('g', 'm', null);
    expect(await store.memberSpeaker('g', 'm')).toBeNull();
  });

  it('refuses a database written by a newer Herald instead of corrupting it', () => {
    const path = tempDbPath();
    createSqliteSettingsStore(openSqlite(path)).close();
    const db = openSqlite(path);
    db.exec("UPDATE schema_migrations SET version = 999 WHERE component = 'settings'");
    db.close();
    expect(() => createSqliteSettingsStore(openSqlite(path))).toThrow(/newer than this Herald/);
  });

  it('applies each component’s migrations once, in order, and rolls back a failing one', () => {
    const db = openSqlite(':memory:');
    migrate(db, 'demo', ['CREATE TABLE a (x)']);
    migrate(db, 'demo', ['CREATE TABLE a (x)', 'CREATE TABLE b (y)']);
    expect(() =>
      migrate(db, 'demo', ['CREATE TABLE a (x)', 'CREATE TABLE b (y)', 'CREATE TABLE c (z); BROKEN']),
    ).toThrow();
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    expect(tables.map((t) => t.name)).toEqual(['a', 'b', 'schema_migrations']);
  });
});
