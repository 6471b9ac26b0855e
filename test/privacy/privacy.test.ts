import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import {
  createPrivacy,
  KEPT_TABLES,
  MEMBER_TABLES,
  parsePrivacyConfig,
  SERVER_TABLES,
} from '../../src/privacy/index.ts';
import type { Database } from '../../src/storage/database.ts';
import { openDatabase } from '../../src/storage/index.ts';
import { openStores, type Stores } from '../../src/storage/stores.ts';

const DAY = 24 * 60 * 60 * 1000;

/** Every store's tables and privacy over one in-memory database, on a clock the test moves. */
async function world(retentionDays = 30) {
  const db = openDatabase({ kind: 'sqlite', path: ':memory:' });
  const stores = await openStores(db);
  let now = Date.UTC(2026, 10, 1);
  const privacy = await createPrivacy(db, {
    retentionDays,
    now: () => now,
    sweepIntervalMs: 3_600_000,
    logger: createLogger({ level: 'error', write: () => {} }),
  });
  return {
    db,
    stores,
    privacy,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** A server's settings in every table a member or an admin can fill. */
async function fill(stores: Stores, guildId: string, userId: string): Promise<void> {
  await stores.settings.setGuildSpeaker(guildId, 'bella');
  await stores.settings.setMemberSpeaker(guildId, userId, 'adam');
  await stores.members.addWord(guildId, 'gg', 'good game');
  await stores.members.setBlocked(guildId, 'troll', true);
  await stores.members.setSpokenName(guildId, userId, 'Ada');
  await stores.members.setMemberTemperature(guildId, userId, 0.5);
  await stores.members.setGuildTemperature(guildId, 0.7);
  await stores.autoread.bindChannel(guildId, 'chan', true);
  await stores.autoread.update(guildId, { maxChars: 300 });
  await stores.autoread.setOptedOut(guildId, 'quiet', true);
  await stores.budget.setDailyCap(guildId, 2);
  await stores.cache.setGuildEnabled(guildId, false);
  await stores.voiceState.saveAll([
    { guildId, session: { guildId, channelId: 'voice', announceChannelId: 'chan', queue: [] } },
  ]);
}

/** Rows per table holding `guildId`. */
async function rowsOf(db: Database, guildId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of SERVER_TABLES) {
    const row = await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE guild_id = $1`, [
      guildId,
    ]);
    counts[table] = Number(row?.n ?? 0);
  }
  return counts;
}

describe('privacy', () => {
  it('names every table with a guild_id column as deleted with its server or kept as a money record', async () => {
    const { db } = await world();
    const tables = await db.all<{ name: string }>(
      "SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) p WHERE p.name = 'guild_id')",
    );
    const classified = new Set<string>([...SERVER_TABLES, ...KEPT_TABLES]);
    expect(tables.map((t) => t.name).filter((name) => !classified.has(name))).toEqual([
      // The removals themselves: the sweep's own record.
      'guild_removals',
    ]);
    for (const table of MEMBER_TABLES) expect(SERVER_TABLES).toContain(table);
  });

  it('deletes a removed server’s data after the grace period, every table of it, and no other server’s', async () => {
    const { db, stores, privacy, advance } = await world(30);
    await fill(stores, 'gone', 'ada');
    await fill(stores, 'stays', 'ada');
    await privacy.serverRemoved('gone');
    advance(29 * DAY);
    expect(await privacy.sweep()).toEqual([]);
    expect(Object.entries(await rowsOf(db, 'gone')).filter(([, n]) => n === 0)).toEqual([]);
    advance(1 * DAY);
    expect(await privacy.sweep()).toEqual(['gone']);
    expect(Object.values(await rowsOf(db, 'gone'))).toEqual(SERVER_TABLES.map(() => 0));
    expect(Object.entries(await rowsOf(db, 'stays')).filter(([, n]) => n === 0)).toEqual([]);
    // Done once: the next sweep has nothing left to delete.
    expect(await privacy.sweep()).toEqual([]);
  });

  it('keeps everything when Herald is invited back within the grace period; a replayed removal does not restart it', async () => {
    const { db, stores, privacy, advance } = await world(30);
    await fill(stores, 'back', 'ada');
    await privacy.serverRemoved('back');
    advance(10 * DAY);
    await privacy.serverPresent('back');
    advance(40 * DAY);
    expect(await privacy.sweep()).toEqual([]);
    expect(Object.entries(await rowsOf(db, 'back')).filter(([, n]) => n === 0)).toEqual([]);

    await privacy.serverRemoved('back');
    advance(20 * DAY);
    await privacy.serverRemoved('back'); // a gateway replay of the same removal
    advance(10 * DAY);
    expect(await privacy.sweep()).toEqual(['back']);
  });

  it('forgets a member in every server: voice, spoken name, temperature; not the block list, opt-outs or others', async () => {
    const { db, stores, privacy } = await world();
    for (const guild of ['one', 'two']) {
      await fill(stores, guild, 'ada');
      await stores.settings.setMemberSpeaker(guild, 'bob', 'adam');
      await stores.members.setBlocked(guild, 'ada', true);
      await stores.autoread.setOptedOut(guild, 'ada', true);
    }
    expect(await privacy.forgetMember('ada')).toBe(4);
    for (const guild of ['one', 'two']) {
      expect(await stores.settings.memberSpeaker(guild, 'ada')).toBeNull();
      expect(await stores.members.spokenName(guild, 'ada')).toBeNull();
      expect(await stores.members.memberTemperature(guild, 'ada')).toBeNull();
      expect(await stores.members.blocked(guild, 'ada')).toBe(true);
      expect(await stores.autoread.optedOut(guild, 'ada')).toBe(true);
      expect(await stores.settings.memberSpeaker(guild, 'bob')).toBe('adam');
      expect(await stores.settings.guild(guild)).toMatchObject({ defaultSpeakerId: 'bella' });
    }
    expect(await privacy.forgetMember('ada')).toBe(0);
    await db.close();
  });

  it('parses DATA_RETENTION_DAYS: 30 by default, 0 allowed, a sentence naming the variable otherwise', () => {
    expect(parsePrivacyConfig({})).toEqual({ ok: true, value: { retentionDays: 30 } });
    expect(parsePrivacyConfig({ DATA_RETENTION_DAYS: '0' })).toEqual({
      ok: true,
      value: { retentionDays: 0 },
    });
    for (const bad of ['-1', 'soon', '1.5', '99999']) {
      const result = parsePrivacyConfig({ DATA_RETENTION_DAYS: bad });
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.problems[0]).toMatch(/^DATA_RETENTION_DAYS must be/);
    }
  });
});
