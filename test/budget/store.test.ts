import { describe, expect, it } from 'vitest';
import {
  BUDGET_MIGRATIONS,
  type BudgetStore,
  createBudgetStore,
  type LedgerInput,
  utcDay,
} from '../../src/budget/index.ts';
import { createSettingsStore, openDatabase, type Queryable } from '../../src/storage/index.ts';
import { describeEachBackend } from '../support/databases.ts';

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

let nextReservation = 1;
async function record(store: BudgetStore, entry: LedgerInput): Promise<void> {
  await store.locked((tx) => tx.recordGeneration(entry, nextReservation++));
}

describeEachBackend('budget store', (backend) => {
  const fresh = async () => createBudgetStore((await backend.fresh()).open());

  it('starts with an empty account and default server settings', async () => {
    const store = await fresh();
    expect(await store.account()).toEqual({
      balanceUsd: null,
      balanceSeenAt: null,
      pricePerCharUsd: null,
      priceCharacters: null,
      blockedSince: null,
      blockedReason: null,
      warned: false,
    });
    expect(await store.guildSettings('g')).toEqual({ guildId: 'g', dailyCapUsd: null, alertChannelId: null });
    expect(await store.alertChannels()).toEqual([]);
    expect(await store.reservations(0)).toEqual([]);
  });

  it('shares a database with the settings store and keeps everything across a reopen', async () => {
    const target = await backend.fresh();
    const db = target.open();
    const settings = await createSettingsStore(db);
    const store = await createBudgetStore(db);
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
    await store.locked(async (tx) => {
      await tx.recordGeneration(row({}), 1);
      await tx.saveAccount(state);
    });
    await store.setDailyCap('g1', 2.5);
    await store.setAlertChannel('g1', '123456789012345678');
    await store.setAlertChannel('g2', '223456789012345678');
    await store.setDailyCap('g2', 1);
    await db.close();

    const second = target.open();
    const reopened = await createBudgetStore(second);
    expect(await reopened.account()).toEqual(state);
    expect(await reopened.ledger()).toHaveLength(1);
    expect(await reopened.guildSettings('g1')).toEqual({
      guildId: 'g1',
      dailyCapUsd: 2.5,
      alertChannelId: '123456789012345678',
    });
    // Setting one column keeps the other.
    expect(await reopened.guildSettings('g2')).toMatchObject({
      dailyCapUsd: 1,
      alertChannelId: '223456789012345678',
    });
    expect(await reopened.alertChannels()).toEqual(['123456789012345678', '223456789012345678']);
    expect(await (await createSettingsStore(second)).guild('g1')).toMatchObject({
      defaultSpeakerId: 'voice',
    });
  });

  it('sums a server’s spend per UTC day and per member, falling back to the estimate', async () => {
    const store = await fresh();
    const lateOn15th = Date.UTC(2026, 0, 15, 23, 59, 59, 999);
    await record(store, row({ userId: 'a', costUsd: 0.01, characters: 100, at: lateOn15th }));
    await record(
      store,
      row({ userId: 'b', costUsd: null, estimatedCostUsd: 0.02, characters: 200, at: lateOn15th }),
    );
    await record(store, row({ userId: 'a', costUsd: 0.005, characters: 50, at: lateOn15th + 1 }));
    await record(store, row({ guildId: 'g2', userId: 'a', costUsd: 1, at: lateOn15th }));
    expect(utcDay(lateOn15th)).toBe('2026-01-15');
    const spend = await store.spendOn('g1', '2026-01-15');
    expect(spend).toMatchObject({ guildId: 'g1', day: '2026-01-15', characters: 300, generations: 2 });
    expect(spend.usd).toBeCloseTo(0.03, 12);
    expect(spend.members).toEqual([
      { userId: 'b', usd: 0.02, characters: 200, generations: 1 },
      { userId: 'a', usd: 0.01, characters: 100, generations: 1 },
    ]);
    expect(await store.spendOn('g1', '2026-01-16')).toMatchObject({ usd: 0.005, characters: 50 });
    expect(await store.spendOn('nobody', '2026-01-15')).toEqual({
      guildId: 'nobody',
      day: '2026-01-15',
      usd: 0,
      characters: 0,
      generations: 0,
      members: [],
    });
  });

  it('lists a user’s recent characters across servers, and filters the ledger', async () => {
    const store = await fresh();
    await record(store, row({ userId: 'u', guildId: 'g1', characters: 5, at: 1_000 }));
    await record(store, row({ userId: 'u', guildId: 'g2', characters: 7, at: 2_000 }));
    await record(store, row({ userId: 'v', guildId: 'g1', characters: 9, at: 3_000 }));
    expect(await store.userCharactersSince('u', 1_000)).toEqual([{ at: 2_000, characters: 7 }]);
    expect(await store.userCharactersSince('u', 0)).toHaveLength(2);
    expect((await store.ledger({ since: 2_000 })).map((r) => r.characters)).toEqual([7, 9]);
    expect((await store.ledger({ guildId: 'g1' })).map((r) => r.characters)).toEqual([5, 9]);
  });

  it('writes nothing of a decision that fails half-way (one transaction)', async () => {
    const store = await fresh();
    await expect(
      store.locked(async (tx) => {
        await tx.recordGeneration(row({}), 1);
        await tx.saveAccount({ ...(await tx.account()), warned: true });
        throw new Error('the process failed here');
      }),
    ).rejects.toThrow('failed here');
    expect(await store.ledger()).toEqual([]);
    expect((await store.account()).warned).toBe(false);
  });

  it('records a reservation’s settlement once, however often it is retried', async () => {
    const store = await fresh();
    const first = await store.locked((tx) => tx.recordGeneration(row({}), 42));
    const again = await store.locked((tx) => tx.recordGeneration(row({ requestId: 'retry' }), 42));
    expect(first).toBeTypeOf('number');
    expect(again).toBeUndefined();
    expect(await store.ledger()).toHaveLength(1);
  });

  it('keeps reservations as rows: overlapping ones are marked, expired ones stop counting and are reconciled', async () => {
    const store = await fresh();
    const base = { kind: 'speech' as const, guildId: 'g', userId: 'u', characters: 10, estimateNanos: 1_000 };
    const a = await store.locked((tx) => tx.addReservation({ ...base, createdAt: 0, expiresAt: 100 }));
    expect(a.overlapped).toBe(false);
    const b = await store.locked((tx) => tx.addReservation({ ...base, createdAt: 10, expiresAt: 200 }));
    expect(b.overlapped).toBe(true);
    expect((await store.reservations(50)).map((r) => [r.id, r.overlapped])).toEqual([
      [a.id, true],
      [b.id, true],
    ]);
    // At 100, a's process is taken to have died: it no longer holds money.
    expect((await store.reservations(100)).map((r) => r.id)).toEqual([b.id]);
    expect((await store.locked((tx) => tx.reconcile(100))).map((r) => r.id)).toEqual([a.id]);
    expect(await store.locked((tx) => tx.takeReservation(a.id))).toBeUndefined();
    expect(await store.locked((tx) => tx.takeReservation(b.id))).toMatchObject({ id: b.id, characters: 10 });
    expect(await store.reservations(0)).toEqual([]);
  });

  it('marks each reservation overlapped once: a burst of them does not rewrite every row in flight again', async () => {
    // Counts the rows the store's statements change, in and out of transactions.
    const db = (await backend.fresh()).open();
    let changed = 0;
    const counting = (q: Queryable): Queryable => ({
      dialect: q.dialect,
      forUpdate: q.forUpdate,
      all: (sql, params) => q.all(sql, params),
      get: (sql, params) => q.get(sql, params),
      run: async (sql, params) => {
        const rows = await q.run(sql, params);
        if (/SET overlapped/.test(sql)) changed += rows;
        return rows;
      },
    });
    const store = await createBudgetStore({
      ...db,
      ...counting(db),
      transaction: (work) => db.transaction((tx) => work(counting(tx))),
      migrate: (component, migrations) => db.migrate(component, migrations),
      close: () => db.close(),
    });
    const base = { kind: 'speech' as const, guildId: 'g', userId: 'u', characters: 10, estimateNanos: 1_000 };
    const burst = [];
    for (let i = 0; i < 50; i++) {
      burst.push(await store.locked((tx) => tx.addReservation({ ...base, createdAt: i, expiresAt: 1_000 })));
    }
    expect(burst.map((r) => r.overlapped)).toEqual([false, ...Array(49).fill(true)]);
    expect((await store.reservations(100)).every((r) => r.overlapped)).toBe(true);
    // The first is marked when the second arrives; every later one is written overlapped. Rewriting every row in
    // flight for each new reservation changed 1 + 2 + … + 49 = 1,225 rows.
    expect(changed).toBe(1);
    // After the one in flight expires, a reservation alone is not overlapped.
    const alone = await store.locked((tx) =>
      tx.addReservation({ ...base, createdAt: 2_000, expiresAt: 3_000 }),
    );
    expect(alone.overlapped).toBe(false);
  });

  it('reconciles what a stopped process left as uncertain rows at their estimate; a late settlement replaces it', async () => {
    const store = await fresh();
    const base = { kind: 'speech' as const, guildId: 'g', userId: 'u', characters: 10, createdAt: 5 };
    const mine = await store.locked((tx) =>
      tx.addReservation({ ...base, estimateNanos: 2_000_000, expiresAt: 1_000, owner: 'host#0' }),
    );
    const other = await store.locked((tx) =>
      tx.addReservation({ ...base, estimateNanos: 3_000_000, expiresAt: 1_000, owner: 'host#1' }),
    );
    // host#0 restarts at 50: what it left is reconciled at once; host#1's reservation still holds money.
    const left = await store.locked((tx) => tx.reconcile(50, 'host#0'));
    expect(left.map((r) => [r.id, r.owner])).toEqual([[mine.id, 'host#0']]);
    expect((await store.reservations(50)).map((r) => r.id)).toEqual([other.id]);
    expect(await store.ledger()).toMatchObject([
      { characters: 10, costUsd: null, estimatedCostUsd: 0.002, uncertain: true, at: 5 },
    ]);
    expect(await store.uncertain()).toEqual({ generations: 1, upToUsd: 0.002 });
    expect((await store.spendOn('g', utcDay(5))).usd).toBeCloseTo(0.002, 9);
    // Reconciling again changes nothing; the settlement, arriving late after all, replaces the estimate once.
    expect(await store.locked((tx) => tx.reconcile(50, 'host#0'))).toEqual([]);
    const settled = await store.locked((tx) =>
      tx.recordGeneration(row({ characters: 10, costUsd: 0.001, guildId: 'g', userId: 'u' }), mine.id),
    );
    expect(settled).toBe((await store.ledger())[0]?.id);
    expect(await store.locked((tx) => tx.recordGeneration(row({ costUsd: 0.009 }), mine.id))).toBeUndefined();
    expect(await store.ledger()).toMatchObject([{ costUsd: 0.001, uncertain: false }]);
    expect(await store.uncertain()).toEqual({ generations: 0, upToUsd: 0 });
  });
});

describe('money as whole nano-dollars (SQLite migration 2)', () => {
  it('converts a version-1 database kept in floating-point dollars, and stores integers from then on', async () => {
    const db = openDatabase({ kind: 'sqlite', path: ':memory:' });
    await db.migrate('budget', { sqlite: BUDGET_MIGRATIONS.sqlite.slice(0, 1), postgres: [] });
    await db.run('UPDATE budget_account SET balance_usd = 0.49999999999999994, price_per_char_usd = 0.0001');
    await db.run(`INSERT INTO budget_ledger (kind, guild_id, user_id, characters, cost_usd, estimated_cost_usd,
      balance_after_usd, request_id, at, day) VALUES ('speech', 'g', 'u', 3, 0.0003, 0.0003, 0.5003, 'r', 1,
      '1970-01-01')`);
    await db.run("INSERT INTO budget_guild (guild_id, daily_cap_usd) VALUES ('g', 0.1)");
    const store = await createBudgetStore(db);
    expect(await store.account()).toMatchObject({ balanceUsd: 0.5, pricePerCharUsd: 0.0001 });
    expect(await store.ledger()).toMatchObject([{ costUsd: 0.0003, balanceAfterUsd: 0.5003, wasted: null }]);
    expect((await store.guildSettings('g')).dailyCapUsd).toBe(0.1);
    const types = await db.get(
      'SELECT typeof(cost_nanos) AS cost, typeof(balance_after_nanos) AS balance FROM budget_ledger',
    );
    expect(types).toEqual({ cost: 'integer', balance: 'integer' });
    expect(await db.get('SELECT balance_nanos FROM budget_account')).toEqual({ balance_nanos: 500_000_000 });
    await db.close();
  });
});
