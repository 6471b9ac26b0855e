import { expect, it } from 'vitest';
import { createSettingsStore } from '../../src/storage/index.ts';
import { describeEachBackend } from '../support/databases.ts';

describeEachBackend('settings store', (backend) => {
  it('falls back to defaults for servers and members never configured', async () => {
    const store = await createSettingsStore((await backend.fresh()).open());
    expect(await store.guild('1')).toEqual({ guildId: '1', defaultSpeakerId: null });
    expect(await store.memberSpeaker('1', '2')).toBeNull();
  });

  it('keeps settings across a reopen (a restart), and shows one process’s writes to another at once', async () => {
    const target = await backend.fresh();
    const first = await createSettingsStore(target.open());
    const other = await createSettingsStore(target.open());
    await first.setGuildSpeaker('g', 'speaker-a');
    await first.setMemberSpeaker('g', 'm', 'speaker-b');
    expect((await other.guild('g')).defaultSpeakerId).toBe('speaker-a');

    const second = await createSettingsStore(target.open());
    expect((await second.guild('g')).defaultSpeakerId).toBe('speaker-a');
    expect(await second.memberSpeaker('g', 'm')).toBe('speaker-b');
    expect(await second.memberSpeaker('other', 'm')).toBeNull();
  });

  it('overwrites and clears a setting', async () => {
    const store = await createSettingsStore((await backend.fresh()).open());
    await store.setGuildSpeaker('g', 'a');
    await store.setGuildSpeaker('g', 'b');
    expect((await store.guild('g')).defaultSpeakerId).toBe('b');
    await store.setMemberSpeaker('g', 'm', 'x');
    await store.setMemberSpeaker('g', 'm', null);
    expect(await store.memberSpeaker('g', 'm')).toBeNull();
  });

  it('refuses a database written by a newer Herald instead of corrupting it', async () => {
    const target = await backend.fresh();
    await createSettingsStore(target.open());
    await target.open().run("UPDATE schema_migrations SET version = 999 WHERE component = 'settings'");
    await expect(createSettingsStore(target.open())).rejects.toThrow(/newer than this Herald/);
  });

  it('applies each component’s migrations once, in order, and rolls back a failing one', async () => {
    const db = (await backend.fresh()).open();
    const list = (...sql: string[]) => ({ sqlite: sql, postgres: sql });
    await db.migrate('demo', list('CREATE TABLE a (x INTEGER)'));
    await db.migrate('demo', list('CREATE TABLE a (x INTEGER)', 'CREATE TABLE b (y INTEGER)'));
    await expect(
      db.migrate(
        'demo',
        list(
          'CREATE TABLE a (x INTEGER)',
          'CREATE TABLE b (y INTEGER)',
          'CREATE TABLE c (z INTEGER); BROKEN',
        ),
      ),
    ).rejects.toThrow();
    await db.run('INSERT INTO a (x) VALUES (1)');
    await db.run('INSERT INTO b (y) VALUES (1)');
    await expect(db.run('INSERT INTO c (z) VALUES (1)')).rejects.toThrow();
    expect(await db.get('SELECT version FROM schema_migrations WHERE component = $1', ['demo'])).toEqual({
      version: 2,
    });
  });

  it('runs migrations once when several processes start at once', async () => {
    const target = await backend.fresh();
    // Each migration fails if it runs twice (the table exists), so a race would reject one of the starts.
    const list = { sqlite: ['CREATE TABLE once (x INTEGER)'], postgres: ['CREATE TABLE once (x INTEGER)'] };
    const starts = Array.from({ length: 6 }, () => target.open().migrate('race', list));
    await expect(Promise.all(starts)).resolves.toHaveLength(6);
    await Promise.all(Array.from({ length: 6 }, () => createSettingsStore(target.open())));
  });
});
