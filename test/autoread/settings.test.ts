import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AUTOREAD_LIMITS,
  createSqliteAutoReadStore,
  defaultAutoReadSettings,
} from '../../src/autoread/settings.ts';
import { createSqliteSettingsStore, openSqlite } from '../../src/storage/sqlite.ts';

const dirs: string[] = [];
function tempDbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-autoread-'));
  dirs.push(dir);
  return join(dir, 'herald.sqlite');
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('SQLite auto-read store', () => {
  it('reads the documented defaults for a server nobody configured', async () => {
    const db = openSqlite(':memory:');
    const store = createSqliteAutoReadStore(db);
    expect(await store.settings('g')).toEqual({
      guildId: 'g',
      channelIds: [],
      readVoiceChat: true,
      onlySameVoice: true,
      ignoreBots: true,
      prefix: '!',
      skipSilent: true,
      announceAuthor: true,
      authorWindowSeconds: 60,
      maxChars: 300,
      emoji: 'name',
      linkDomains: false,
      autoJoin: false,
    });
    expect(await store.optedOut('g', 'm')).toBe(false);
    db.close();
  });

  it('changes only the settings given, and keeps the rest at their defaults', async () => {
    const db = openSqlite(':memory:');
    const store = createSqliteAutoReadStore(db);
    await store.update('g', { maxChars: 120, prefix: '' });
    const after = await store.update('g', { emoji: 'drop', onlySameVoice: false });
    expect(after).toEqual({
      ...defaultAutoReadSettings('g'),
      maxChars: 120,
      prefix: '',
      emoji: 'drop',
      onlySameVoice: false,
    });
    expect(await store.settings('other')).toEqual(defaultAutoReadSettings('other'));
    db.close();
  });

  it('binds, refuses a duplicate, unbinds, and keeps servers apart', async () => {
    const db = openSqlite(':memory:');
    const store = createSqliteAutoReadStore(db);
    expect(await store.bindChannel('g', 'c1', true)).toEqual({ kind: 'bound' });
    expect(await store.bindChannel('g', 'c2', true)).toEqual({ kind: 'bound' });
    expect(await store.bindChannel('g', 'c1', true)).toEqual({ kind: 'unchanged' });
    expect((await store.settings('g')).channelIds).toEqual(['c1', 'c2']);
    expect((await store.settings('h')).channelIds).toEqual([]);
    expect(await store.bindChannel('g', 'c1', false)).toEqual({ kind: 'unbound' });
    expect(await store.bindChannel('g', 'c1', false)).toEqual({ kind: 'unchanged' });
    expect((await store.settings('g')).channelIds).toEqual(['c2']);
    db.close();
  });

  it('caps the number of bound channels per server', async () => {
    const db = openSqlite(':memory:');
    const store = createSqliteAutoReadStore(db);
    const limit = AUTOREAD_LIMITS.boundChannels;
    for (let i = 0; i < limit; i++) await store.bindChannel('g', `c${i}`, true);
    expect(await store.bindChannel('g', 'one-more', true)).toEqual({ kind: 'too-many', limit });
    expect((await store.settings('g')).channelIds).toHaveLength(limit);
    db.close();
  });

  it('records a member’s opt-out per server and undoes it', async () => {
    const db = openSqlite(':memory:');
    const store = createSqliteAutoReadStore(db);
    await store.setOptedOut('g', 'm', true);
    await store.setOptedOut('g', 'm', true);
    expect(await store.optedOut('g', 'm')).toBe(true);
    expect(await store.optedOut('h', 'm')).toBe(false);
    await store.setOptedOut('g', 'm', false);
    expect(await store.optedOut('g', 'm')).toBe(false);
    db.close();
  });

  it.each([
    ['max chars below the minimum', { maxChars: AUTOREAD_LIMITS.maxChars.min - 1 }],
    ['max chars above the maximum', { maxChars: AUTOREAD_LIMITS.maxChars.max + 1 }],
    ['a fractional max chars', { maxChars: 100.5 }],
    ['a negative window', { authorWindowSeconds: -1 }],
    ['a prefix that is too long', { prefix: 'x'.repeat(AUTOREAD_LIMITS.prefixLength + 1) }],
    ['an unknown emoji mode', { emoji: 'shout' as 'name' }],
  ])('refuses %s and writes nothing', async (_name, patch) => {
    const db = openSqlite(':memory:');
    const store = createSqliteAutoReadStore(db);
    await expect(store.update('g', patch)).rejects.toThrow(RangeError);
    expect(await store.settings('g')).toEqual(defaultAutoReadSettings('g'));
    db.close();
  });

  it('keeps everything across a reopen of the file, beside the other settings tables', async () => {
    const path = tempDbPath();
    const first = openSqlite(path);
    const settings = createSqliteSettingsStore(first);
    const store = createSqliteAutoReadStore(first);
    await settings.setGuildSpeaker('g', 'speaker-a');
    await store.update('g', { announceAuthor: false, authorWindowSeconds: 5, linkDomains: true });
    await store.bindChannel('g', 'c1', true);
    await store.setOptedOut('g', 'm', true);
    settings.close();

    const second = openSqlite(path);
    const reopened = createSqliteAutoReadStore(second);
    expect(await reopened.settings('g')).toEqual({
      ...defaultAutoReadSettings('g'),
      channelIds: ['c1'],
      announceAuthor: false,
      authorWindowSeconds: 5,
      linkDomains: true,
    });
    expect(await reopened.optedOut('g', 'm')).toBe(true);
    expect((await createSqliteSettingsStore(second).guild('g')).defaultSpeakerId).toBe('speaker-a');
    const versions = second
      .prepare('SELECT component, version FROM schema_migrations ORDER BY component')
      .all();
    expect(versions).toEqual([
      { component: 'autoread', version: 2 },
      { component: 'settings', version: 1 },
    ]);
    second.close();
  });
});
