import { afterEach, describe, expect, it } from 'vitest';
import {
  BUDGET_MIGRATIONS,
  type BudgetStore,
  createSqliteBudgetStore,
  type LedgerInput,
  utcDay,
} from '../../src/budget/index.ts';
import { createSqliteSettingsStore, migrate, openSqlite } from '../../src/storage/sqlite.ts';
import { cleanTempDirs, tempDbPath } from './helpers.ts';

afterEach(cleanTempDirs);

const row = (over: Partial<LedgerInput>): LedgerInput => ({
  kind: 'speech',
  guildId: 'g1',
  userId: 'm1',
  characters: 10,
  costUsd: 0.001,
  estimatedCostUsd: 0.001,
  balanceAfterUsd: 9,
  requestId: 'r',
  at: Date.UTC(2026, 0, 15, 12),
  ...over,
});

function record(store: BudgetStore, entry: LedgerInput): void {
  store.recordGeneration(entry, store.account());
}

describe('SQLite budget store', () => {
  it('starts with an empty account and default server settings', () => {
    const store = createSqliteBudgetStore(openSqlite(':memory:'));
    expect(store.account()).toEqual({
      balanceUsd: null,
      balanceSeenAt: null,
      pricePerCharUsd: null,
      priceCharacters: null,
      blockedSince: null,
      blockedReason: null,
      warned: false,
    });
    expect(store.guildSettings('g')).toEqual({ guildId: 'g', dailyCapUsd: null, alertChannelId: null });
    expect(store.alertChannels()).toEqual([]);
  });

  it('shares a database with the settings store and keeps everything across a reopen', async () => {
    const path = tempDbPath();
    const db = openSqlite(path);
    const settings = createSqliteSettingsStore(db);
    const store = createSqliteBudgetStore(db);
    await settings.setGuildSpeaker('g1', 'voice');
    const state = {
      balanceUsd: 1.25,
      balanceSeenAt: 5,
      pricePerCharUsd: 0.0001,
      priceCharacters: 100,
      blockedSince: 7,
      blockedReason: 'service-refused' as const,
      warned: true,
    };
    store.recordGeneration(row({}), state);
    store.setDailyCap('g1', 2.5);
    store.setAlertChannel('g1', '123456789012345678');
    store.setAlertChannel('g2', '223456789012345678');
    store.setDailyCap('g2', 1);
    store.close();
    settings.close();

    const reopened = createSqliteBudgetStore(openSqlite(path));
    expect(reopened.account()).toEqual(state);
    expect(reopened.ledger()).toHaveLength(1);
    expect(reopened.guildSettings('g1')).toEqual({
      guildId: 'g1',
      dailyCapUsd: 2.5,
      alertChannelId: '123456789012345678',
    });
    // Setting one column keeps the other.
    expect(reopened.guildSettings('g2')).toMatchObject({
      dailyCapUsd: 1,
      alertChannelId: '223456789012345678',
    });
    expect(reopened.alertChannels()).toEqual(['123456789012345678', '223456789012345678']);
    reopened.close();
    expect(await createSqliteSettingsStore(openSqlite(path)).guild('g1')).toMatchObject({
      defaultSpeakerId: 'voice',
    });
  });

  it('sums a server’s spend per UTC day and per member, falling back to the estimate', () => {
    const store = createSqliteBudgetStore(openSqlite(':memory:'));
    const lateOn15th = Date.UTC(2026, 0, 15, 23, 59, 59, 999);
    record(store, row({ userId: 'a', costUsd: 0.01, characters: 100, at: lateOn15th }));
    record(
      store,
      row({ userId: 'b', costUsd: null, estimatedCostUsd: 0.02, characters: 200, at: lateOn15th }),
    );
    record(store, row({ userId: 'a', costUsd: 0.005, characters: 50, at: lateOn15th + 1 }));
    record(store, row({ guildId: 'g2', userId: 'a', costUsd: 1, at: lateOn15th }));
    expect(utcDay(lateOn15th)).toBe('2026-01-15');
    const spend = store.spendOn('g1', '2026-01-15');
    expect(spend).toMatchObject({ guildId: 'g1', day: '2026-01-15', characters: 300, generations: 2 });
    expect(spend.usd).toBeCloseTo(0.03, 12);
    expect(spend.members).toEqual([
      { userId: 'b', usd: 0.02, characters: 200, generations: 1 },
      { userId: 'a', usd: 0.01, characters: 100, generations: 1 },
    ]);
    expect(store.spendOn('g1', '2026-01-16')).toMatchObject({ usd: 0.005, characters: 50 });
    expect(store.spendOn('nobody', '2026-01-15')).toEqual({
      guildId: 'nobody',
      day: '2026-01-15',
      usd: 0,
      characters: 0,
      generations: 0,
      members: [],
    });
  });

  it('lists a user’s recent characters across servers, and filters the ledger', () => {
    const store = createSqliteBudgetStore(openSqlite(':memory:'));
    record(store, row({ userId: 'u', guildId: 'g1', characters: 5, at: 1_000 }));
    record(store, row({ userId: 'u', guildId: 'g2', characters: 7, at: 2_000 }));
    record(store, row({ userId: 'v', guildId: 'g1', characters: 9, at: 3_000 }));
    expect(store.userCharactersSince('u', 1_000)).toEqual([{ at: 2_000, characters: 7 }]);
    expect(store.userCharactersSince('u', 0)).toHaveLength(2);
    expect(store.ledger({ since: 2_000 }).map((r) => r.characters)).toEqual([7, 9]);
    expect(store.ledger({ guildId: 'g1' }).map((r) => r.characters)).toEqual([5, 9]);
  });

  it('does not write the ledger row when the account update fails (one transaction)', () => {
    const store = createSqliteBudgetStore(openSqlite(':memory:'));
    // A symbol cannot be bound: the account update throws after the ledger insert ran.
    const unbindable = {
      ...store.account(),
      warned: true,
      blockedReason: Symbol('x') as unknown as 'floor-reached',
    };
    expect(() => store.recordGeneration(row({}), unbindable)).toThrow();
    expect(store.ledger()).toEqual([]);
    expect(store.account().warned).toBe(false);
  });
});

describe('money as whole nano-dollars (migration 2)', () => {
  it('converts a version-1 database kept in floating-point dollars, and stores integers from then on', () => {
    const db = openSqlite(':memory:');
    migrate(db, 'budget', BUDGET_MIGRATIONS.slice(0, 1));
    db.exec(`UPDATE budget_account SET balance_usd = 0.49999999999999994, price_per_char_usd = 0.0001 WHERE id = 1;
      INSERT INTO budget_ledger (kind, guild_id, user_id, characters, cost_usd, estimated_cost_usd, balance_after_usd,
        request_id, at, day) VALUES ('speech', 'g', 'u', 3, 0.0003, 0.0003, 0.5003, 'r', 1, '1970-01-01');
      INSERT INTO budget_guild (guild_id, daily_cap_usd) VALUES ('g', 0.1);`);
    const store = createSqliteBudgetStore(db);
    expect(store.account()).toMatchObject({ balanceUsd: 0.5, pricePerCharUsd: 0.0001 });
    expect(store.ledger()).toMatchObject([{ costUsd: 0.0003, balanceAfterUsd: 0.5003, wasted: null }]);
    expect(store.guildSettings('g').dailyCapUsd).toBe(0.1);
    const types = db
      .prepare('SELECT typeof(cost_nanos) AS cost, typeof(balance_after_nanos) AS balance FROM budget_ledger')
      .get();
    expect(types).toEqual({ cost: 'integer', balance: 'integer' });
    expect(db.prepare('SELECT balance_nanos FROM budget_account').get()).toEqual({
      balance_nanos: 500_000_000,
    });
    store.close();
  });
});
