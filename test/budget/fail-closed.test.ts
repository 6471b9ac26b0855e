import { describe, expect, it } from 'vitest';
import { type BudgetStore, createBudgetGuard } from '../../src/budget/index.ts';
import { silentLogger } from '../../src/log.ts';
import { until } from '../support/until.ts';
import { fakeService, makeGuard, NOON, req } from './helpers.ts';

// The guard fails closed: a response that does not say what was spent, or what is left, never counts as free.
describe('the budget guard without the service’s money headers', () => {
  it('keeps the floor when no generation reports the balance: the last known one, less each cost', async () => {
    const { guard } = await makeGuard({
      account: { balanceUsd: 0.6, balanceSeenAt: 0, pricePerCharUsd: 0.0001, priceCharacters: 100 },
    });
    const service = fakeService(0.6);
    let spoken = 0;
    for (let i = 0; i < 30; i++) {
      const outcome = await guard.reserve(req(100));
      if (outcome.kind !== 'reserved') break;
      const { costUsd, requestId } = service.charge(100);
      await guard.settle(outcome.reservation, { costUsd, requestId, balanceUsd: undefined });
      spoken += 1;
    }
    expect(spoken).toBe(10);
    expect(service.balanceUsd).toBeGreaterThanOrEqual(0.5);
    expect((await guard.status()).balanceUsd).toBeCloseTo(0.5, 9);
  });

  it('deducts the estimate when neither the cost nor the balance is reported', async () => {
    const { guard } = await makeGuard({
      account: { balanceUsd: 0.6, balanceSeenAt: 0 },
      pricePerCharUsd: 0.0001,
    });
    const service = fakeService(0.6);
    let spoken = 0;
    for (let i = 0; i < 30; i++) {
      const outcome = await guard.reserve(req(100));
      if (outcome.kind !== 'reserved') break;
      service.charge(100);
      await guard.settle(outcome.reservation, {
        costUsd: undefined,
        requestId: undefined,
        balanceUsd: undefined,
      });
      spoken += 1;
    }
    expect(spoken).toBe(10);
    expect(service.balanceUsd).toBeGreaterThanOrEqual(0.5);
  });

  it('applies a daily cap with no price known and no cost reported, at the assumed price', async () => {
    const { guard } = await makeGuard({ floorUsd: 0, account: { balanceUsd: 10, balanceSeenAt: 0 } });
    await guard.setDailyCap('g1', 0.05);
    const outcomes: string[] = [];
    for (let i = 0; i < 5; i++) {
      const outcome = await guard.reserve(req(100));
      outcomes.push(outcome.kind);
      if (outcome.kind === 'reserved')
        await guard.settle(outcome.reservation, {
          costUsd: undefined,
          requestId: undefined,
          balanceUsd: undefined,
        });
    }
    // 100 characters at the assumed $0.0003 are $0.03: one fits under $0.05, the second would not.
    expect(outcomes).toEqual(['reserved', 'daily-cap', 'daily-cap', 'daily-cap', 'daily-cap']);
  });

  it('stops, saying why, when the balance was never known and the first response does not report it', async () => {
    const { guard, alerts } = await makeGuard({ pricePerCharUsd: 0.0001 });
    const outcome = await guard.reserve(req(10));
    if (outcome.kind !== 'reserved') throw new Error('expected a reservation');
    // While the first generation is in flight, a second waits rather than racing past an unknown floor.
    expect((await guard.reserve(req(10))).kind).toBe('learning');
    await guard.settle(outcome.reservation, { costUsd: 0.001, requestId: undefined, balanceUsd: undefined });
    expect(await guard.status()).toMatchObject({ status: 'blocked', reason: 'balance-unknown' });
    expect(alerts).toMatchObject([{ kind: 'blocked', reason: 'balance-unknown' }]);
    expect(await guard.check(req(10))).toMatchObject({ kind: 'blocked', reason: 'balance-unknown' });
  });

  it('does not serialise generations for good: learning ends with the first balance', async () => {
    const { guard } = await makeGuard({ pricePerCharUsd: 0.0001 });
    const first = await guard.reserve(req(10));
    if (first.kind !== 'reserved') throw new Error('expected a reservation');
    await guard.settle(first.reservation, { costUsd: 0.001, requestId: undefined, balanceUsd: 5 });
    const a = await guard.reserve(req(10));
    const b = await guard.reserve(req(10));
    expect([a.kind, b.kind]).toEqual(['reserved', 'reserved']);
  });

  it('with a floor of 0 and no balance known, never waits: the service’s own refusal is the floor', async () => {
    const { guard } = await makeGuard({ floorUsd: 0 });
    expect([(await guard.reserve(req(10))).kind, (await guard.reserve(req(10))).kind]).toEqual([
      'reserved',
      'reserved',
    ]);
  });
});

describe('what is queued counts before it is paid for', () => {
  it('the member rate limit counts the member’s queued characters', async () => {
    const { guard } = await makeGuard({
      memberCharsPerMinute: 1_000,
      account: { balanceUsd: 10, balanceSeenAt: 0 },
    });
    const queued = { member: 950, guild: 950, all: 950 };
    expect((await guard.check(req(40), queued)).kind).toBe('ok');
    expect(await guard.check(req(100), queued)).toMatchObject({ kind: 'member-rate', usedCharacters: 950 });
    expect((await guard.check(req(100), { member: 0, guild: 950, all: 950 })).kind).toBe('ok');
  });

  it('the floor and the daily cap count everyone’s queued characters', async () => {
    const { guard } = await makeGuard({
      floorUsd: 0.5,
      account: { balanceUsd: 0.6, balanceSeenAt: 0, pricePerCharUsd: 0.0001, priceCharacters: 100 },
    });
    expect((await guard.check(req(100), { member: 0, guild: 0, all: 900 })).kind).toBe('ok');
    expect((await guard.check(req(101), { member: 0, guild: 0, all: 900 })).kind).toBe('would-cross-floor');
    await guard.setDailyCap('g1', 0.02);
    expect((await guard.check(req(100), { member: 0, guild: 100, all: 100 })).kind).toBe('ok');
    expect((await guard.check(req(101), { member: 0, guild: 100, all: 100 })).kind).toBe('daily-cap');
  });
});

describe('a settlement or release the database does not take', () => {
  /** A guard on a store that refuses every decision while `away.now` is true, as a database that went down. */
  async function guardWithOutage() {
    const { store, clock } = await makeGuard();
    const away = { now: false, attempts: 0 };
    const flaky: BudgetStore = {
      ...store,
      locked: (work) => {
        away.attempts += 1;
        return away.now
          ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'))
          : store.locked(work);
      },
    };
    const guard = await createBudgetGuard({
      store: flaky,
      floorUsd: 0.5,
      memberCharsPerMinute: 1_000_000,
      logger: silentLogger,
      now: () => clock.now,
      retryDelaysMs: { first: 20, max: 40 },
    });
    await guard.recheck(async () => ({ ...fakeService(10).charge(1), characters: 1 }), {
      guildId: 'g1',
      userId: 'm1',
    });
    return { guard, store, away };
  }

  it('resolves at once (the service charged; the audio is the member’s) and writes the row when it is back', async () => {
    const { guard, store, away } = await guardWithOutage();
    const outcome = await guard.reserve(req(100));
    if (outcome.kind !== 'reserved') throw new Error(outcome.kind);
    away.now = true;
    const recorded: number[] = [];
    const settled = await guard.settle(
      outcome.reservation,
      { costUsd: 0.01, balanceUsd: 9.98, requestId: 'req-away' },
      (id) => recorded.push(id),
    );
    expect(settled).toBeUndefined();
    // Meanwhile the reservation holds its estimate: spending fails closed.
    expect((await store.reservations(NOON)).map((r) => r.id)).toEqual([outcome.reservation.id]);
    const tried = away.attempts;
    await until('a retry', async () => (away.attempts > tried + 1 ? true : undefined));
    away.now = false;
    const ledgerId = await until('the row', async () => recorded[0]);
    const status = await guard.status();
    expect(status.inFlight).toBe(0);
    expect(status.balanceUsd).toBeCloseTo(9.98, 9);
    expect(typeof ledgerId).toBe('number');
    expect(recorded).toHaveLength(1);
  });

  it('a release the database did not take is retried too, and the caller’s error is not replaced', async () => {
    const { guard, away } = await guardWithOutage();
    const outcome = await guard.reserve(req(100));
    if (outcome.kind !== 'reserved') throw new Error(outcome.kind);
    away.now = true;
    await expect(
      guard.release(outcome.reservation, new Error('the service said no')),
    ).resolves.toBeUndefined();
    away.now = false;
    await until('the reservation freed', async () =>
      (await guard.status()).inFlight === 0 ? true : undefined,
    );
  });
});
