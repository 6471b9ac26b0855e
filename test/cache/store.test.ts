import { describe, expect, it } from 'vitest';
import { CACHE_DEFAULTS, createCacheStore, parseCacheConfig } from '../../src/cache/index.ts';
import { openDatabase } from '../../src/storage/index.ts';

const memory = () => openDatabase({ kind: 'sqlite', path: ':memory:' });

describe('the cache store', () => {
  it('keeps one secret per installation, across reopening', async () => {
    const db = memory();
    const first = await (await createCacheStore(db)).secret();
    expect(first).toHaveLength(32);
    expect((await (await createCacheStore(db)).secret()).equals(first)).toBe(true);
    expect((await (await createCacheStore(memory())).secret()).equals(first)).toBe(false);
  });

  it('lets a server turn caching off and on; on by default', async () => {
    const store = await createCacheStore(memory());
    expect(await store.guildEnabled('g1')).toBe(true);
    await store.setGuildEnabled('g1', false);
    expect(await store.guildEnabled('g1')).toBe(false);
    expect(await store.guildEnabled('g2')).toBe(true);
    await store.setGuildEnabled('g1', true);
    expect(await store.guildEnabled('g1')).toBe(true);
  });

  it('sums hits per server, for a day and in total', async () => {
    const store = await createCacheStore(memory());
    const day1 = Date.UTC(2026, 0, 1, 12);
    const day2 = Date.UTC(2026, 0, 2, 12);
    await store.recordHit({ guildId: 'g1', userId: 'u', characters: 10, savedUsd: 0.001, at: day1 });
    await store.recordHit({ guildId: 'g1', userId: 'u', characters: 5, savedUsd: 0.0005, at: day2 });
    await store.recordHit({ guildId: 'g1', userId: 'v', characters: 3, savedUsd: 0.0003, at: day2 });
    await store.recordHit({ guildId: 'g2', userId: 'u', characters: 99, savedUsd: 1, at: day2 });
    const savings = await store.savings('g1', '2026-01-02');
    expect(savings.day).toEqual({ hits: 2, characters: 8, usd: expect.closeTo(0.0008, 9) });
    expect(savings.total).toEqual({ hits: 3, characters: 18, usd: expect.closeTo(0.0018, 9) });
    expect((await store.savings('g3', '2026-01-02')).total).toEqual({ hits: 0, characters: 0, usd: 0 });
  });
});

describe('parseCacheConfig', () => {
  it('defaults: 256 MB, 30 days, 200 characters, beside the database', () => {
    const parsed = parseCacheConfig({}, './data/herald.sqlite');
    expect(parsed).toEqual({
      ok: true,
      value: {
        maxBytes: CACHE_DEFAULTS.megabytes * 1024 * 1024,
        maxAgeMs: 30 * 86_400_000,
        maxChars: 200,
        dir: 'data/audio-cache',
      },
    });
  });

  it('reads every variable; 0 MB turns the cache off', () => {
    const parsed = parseCacheConfig(
      {
        AUDIO_CACHE_MB: '0',
        AUDIO_CACHE_DAYS: '2',
        AUDIO_CACHE_MAX_CHARS: '50',
        AUDIO_CACHE_DIR: '/var/cache/h',
      },
      ':memory:',
    );
    expect(parsed).toEqual({
      ok: true,
      value: { maxBytes: 0, maxAgeMs: 2 * 86_400_000, maxChars: 50, dir: '/var/cache/h' },
    });
  });

  it('lists every bad value, naming its variable', () => {
    const parsed = parseCacheConfig(
      { AUDIO_CACHE_MB: '-1', AUDIO_CACHE_DAYS: '0', AUDIO_CACHE_MAX_CHARS: 'lots' },
      ':memory:',
    );
    expect(parsed.ok).toBe(false);
    const problems = parsed.ok ? [] : parsed.problems;
    expect(problems).toHaveLength(3);
    expect(problems.join(' ')).toMatch(/AUDIO_CACHE_MB.*AUDIO_CACHE_DAYS.*AUDIO_CACHE_MAX_CHARS/);
  });
});
