import { describe, expect, it } from 'vitest';
import {
  CACHE_DEFAULTS,
  CACHE_MIGRATIONS,
  createCacheStore,
  parseCacheConfig,
} from '../../src/cache/index.ts';
import { openDatabase } from '../../src/storage/index.ts';
import { describeEachBackend } from '../support/databases.ts';

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

describeEachBackend('savings as whole nano-dollars (cache migration 2)', (backend) => {
  it('converts a version-1 ledger kept in floating-point dollars, and stores integers from then on', async () => {
    const db = (await backend.fresh()).open();
    const version1 = {
      sqlite: CACHE_MIGRATIONS.sqlite.slice(0, 1),
      postgres: CACHE_MIGRATIONS.postgres.slice(0, 1),
    };
    await db.migrate('cache', version1);
    const at = Date.UTC(2026, 0, 2, 12);
    const insert = `INSERT INTO audio_cache_ledger (guild_id, user_id, characters, saved_usd, at, day)
      VALUES ('g', 'u', $1, $2, $3, '2026-01-02')`;
    // 0.1 + 0.2 and 0.0123 are not exact in binary; each is whole nano-dollars once rounded.
    await db.run(insert, [10, 0.1 + 0.2, at]);
    await db.run(insert, [3, 0.0123, at]);
    await db.run(insert, [4, 0.49999999999999994, at]);
    const store = await createCacheStore(db);
    expect(await db.all('SELECT saved_nanos FROM audio_cache_ledger ORDER BY id')).toEqual([
      { saved_nanos: 300_000_000 },
      { saved_nanos: 12_300_000 },
      { saved_nanos: 500_000_000 },
    ]);
    const type =
      db.dialect === 'sqlite'
        ? 'SELECT DISTINCT typeof(saved_nanos) AS type FROM audio_cache_ledger'
        : `SELECT data_type AS type FROM information_schema.columns
           WHERE table_name = 'audio_cache_ledger' AND column_name = 'saved_nanos'`;
    expect(await db.all(type)).toEqual([{ type: db.dialect === 'sqlite' ? 'integer' : 'bigint' }]);

    await store.recordHit({ guildId: 'g', userId: 'u', characters: 7, savedUsd: 0.0000000016, at });
    expect(await db.get('SELECT saved_nanos FROM audio_cache_ledger WHERE characters = 7')).toEqual({
      saved_nanos: 2,
    });
    // The sum is exact: 0.812300002, not a float's approximation of it.
    expect(await store.savings('g', '2026-01-02')).toEqual({
      day: { hits: 4, characters: 24, usd: 812_300_002 / 1e9 },
      total: { hits: 4, characters: 24, usd: 812_300_002 / 1e9 },
    });
  });
});

describe('parseCacheConfig', () => {
  it('every process of the machine, shard or not, gets the whole folder and the whole size', () => {
    const parsed = parseCacheConfig({ AUDIO_CACHE_MB: '100' }, './data/herald.sqlite');
    expect(parsed).toMatchObject({
      ok: true,
      value: { maxBytes: 100 * 1024 * 1024, dir: 'data/audio-cache' },
    });
  });

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
