import { expect, it } from 'vitest';
import {
  AUTOREAD_LIMITS,
  createAutoReadStore,
  defaultAutoReadSettings,
} from '../../src/autoread/settings.ts';
import { createSettingsStore } from '../../src/storage/index.ts';
import { describeEachBackend } from '../support/databases.ts';

describeEachBackend('auto-read store', (backend) => {
  it('reads the documented defaults for a server nobody configured', async () => {
    const store = await createAutoReadStore((await backend.fresh()).open());
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
  });

  it('changes only the settings given, and keeps the rest at their defaults', async () => {
    const store = await createAutoReadStore((await backend.fresh()).open());
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
  });

  it('binds, refuses a duplicate, unbinds, and keeps servers apart', async () => {
    const store = await createAutoReadStore((await backend.fresh()).open());
    expect(await store.bindChannel('g', 'c1', true)).toEqual({ kind: 'bound' });
    expect(await store.bindChannel('g', 'c2', true)).toEqual({ kind: 'bound' });
    expect(await store.bindChannel('g', 'c1', true)).toEqual({ kind: 'unchanged' });
    expect((await store.settings('g')).channelIds).toEqual(['c1', 'c2']);
    expect((await store.settings('h')).channelIds).toEqual([]);
    expect(await store.bindChannel('g', 'c1', false)).toEqual({ kind: 'unbound' });
    expect(await store.bindChannel('g', 'c1', false)).toEqual({ kind: 'unchanged' });
    expect((await store.settings('g')).channelIds).toEqual(['c2']);
  });

  it('caps the number of bound channels per server', async () => {
    const store = await createAutoReadStore((await backend.fresh()).open());
    const limit = AUTOREAD_LIMITS.boundChannels;
    for (let i = 0; i < limit; i++) await store.bindChannel('g', `c${i}`, true);
    expect(await store.bindChannel('g', 'one-more', true)).toEqual({ kind: 'too-many', limit });
    expect((await store.settings('g')).channelIds).toHaveLength(limit);
  });

  it('records a member’s opt-out per server and undoes it', async () => {
    const store = await createAutoReadStore((await backend.fresh()).open());
    await store.setOptedOut('g', 'm', true);
    await store.setOptedOut('g', 'm', true);
    expect(await store.optedOut('g', 'm')).toBe(true);
    expect(await store.optedOut('h', 'm')).toBe(false);
    await store.setOptedOut('g', 'm', false);
    expect(await store.optedOut('g', 'm')).toBe(false);
  });

  it.each([
    ['max chars below the minimum', { maxChars: AUTOREAD_LIMITS.maxChars.min - 1 }],
    ['max chars above the maximum', { maxChars: AUTOREAD_LIMITS.maxChars.max + 1 }],
    ['a fractional max chars', { maxChars: 100.5 }],
    ['a negative window', { authorWindowSeconds: -1 }],
    ['a prefix that is too long', { prefix: 'x'.repeat(AUTOREAD_LIMITS.prefixLength + 1) }],
    ['an unknown emoji mode', { emoji: 'shout' as 'name' }],
  ])('refuses %s and writes nothing', async (_name, patch) => {
    const store = await createAutoReadStore((await backend.fresh()).open());
    await expect(store.update('g', patch)).rejects.toThrow(RangeError);
    expect(await store.settings('g')).toEqual(defaultAutoReadSettings('g'));
  });

  it('keeps everything across a reopen of the file, beside the other settings tables', async () => {
    const target = await backend.fresh();
    const first = target.open();
    const settings = await createSettingsStore(first);
    const store = await createAutoReadStore(first);
    await settings.setGuildSpeaker('g', 'speaker-a');
    await store.update('g', { announceAuthor: false, authorWindowSeconds: 5, linkDomains: true });
    await store.bindChannel('g', 'c1', true);
    await store.setOptedOut('g', 'm', true);
    await first.close();

    const second = target.open();
    const reopened = await createAutoReadStore(second);
    expect(await reopened.settings('g')).toEqual({
      ...defaultAutoReadSettings('g'),
      channelIds: ['c1'],
      announceAuthor: false,
      authorWindowSeconds: 5,
      linkDomains: true,
    });
    expect(await reopened.optedOut('g', 'm')).toBe(true);
    expect((await (await createSettingsStore(second)).guild('g')).defaultSpeakerId).toBe('speaker-a');
    const versions = await second.all('SELECT component, version FROM schema_migrations ORDER BY component');
    expect(versions).toEqual([
      { component: 'autoread', version: 2 },
      { component: 'settings', version: 1 },
    ]);
  });
});
