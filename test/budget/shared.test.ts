import { expect, it } from 'vitest';
import type { BudgetGuard } from '../../src/budget/index.ts';
import { describeEachBackend } from '../support/databases.ts';
import { fakeService, makeGuard, NOON, req } from './helpers.ts';

const PRICE = 0.0001;
const PROCESSES = 4;

/** A few event-loop turns, so the processes' requests interleave as real network calls would. */
const turns = async (count: number): Promise<void> => {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * One member's `/speak` in one process: reserve (waiting while the balance is learned), the paid call, settle, or
 * release on a 402. Returns the outcome's kind.
 */
async function speak(
  guard: BudgetGuard,
  service: ReturnType<typeof fakeService>,
  request: ReturnType<typeof req>,
  delay: number,
): Promise<string> {
  const outcome = await guard.acquire(request);
  if (outcome.kind !== 'reserved') return outcome.kind;
  await turns(delay);
  let settlement: ReturnType<typeof service.charge>;
  try {
    settlement = service.charge(request.characters);
  } catch (error) {
    await guard.release(outcome.reservation, error);
    return 'service-refused';
  }
  await turns(delay % 3);
  await guard.settle(outcome.reservation, settlement);
  return 'spoken';
}

describeEachBackend('one budget shared by several processes', (backend) => {
  /** `PROCESSES` guards, each with its own connection (its own pool on PostgreSQL) to one database. */
  const processes = async (options: Parameters<typeof makeGuard>[0] = {}) => {
    const target = await backend.fresh();
    const first = await makeGuard({ target, pricePerCharUsd: PRICE, ...options });
    const rest = await Promise.all(
      Array.from({ length: PROCESSES - 1 }, () => makeGuard({ target, pricePerCharUsd: PRICE, ...options })),
    );
    return [first, ...rest];
  };

  const everyone = (guards: { guard: BudgetGuard }[], service: ReturnType<typeof fakeService>, guilds = 40) =>
    Promise.all(
      Array.from({ length: guilds }, (_, i) => {
        const guard = guards[i % guards.length]?.guard;
        if (!guard) throw new Error('no guard');
        return speak(guard, service, req(100, `m${i}`, `g${i % 10}`), (i * 7) % 5);
      }),
    );

  it('never crosses the floor, and the ledger holds exactly what the service charged', async () => {
    // 3.5 utterances above the floor; every process believes in the same balance.
    const guards = await processes({
      account: { balanceUsd: 0.535, pricePerCharUsd: PRICE, priceCharacters: 100 },
    });
    const service = fakeService(0.535, PRICE);
    const outcomes = await everyone(guards, service);

    expect(outcomes.filter((o) => o === 'spoken')).toHaveLength(3);
    expect(outcomes.filter((o) => o === 'service-refused')).toHaveLength(0);
    expect(service.balanceUsd).toBeGreaterThanOrEqual(0.5);
    const ledger = await guards[0]?.store.ledger();
    const nanos = (usd: number | null) => Math.round((usd ?? 0) * 1e9);
    expect(ledger?.reduce((sum, row) => sum + nanos(row.costUsd), 0)).toBe(
      service.charges.reduce((sum, charge) => sum + nanos(charge.costUsd), 0),
    );
    expect(ledger?.map((row) => row.requestId).sort()).toEqual(
      service.charges.map((c) => c.requestId).sort(),
    );
    // Every process sees the same state at once: blocked at the floor, nothing left reserved.
    for (const { guard } of guards) {
      expect(await guard.status()).toMatchObject({ inFlight: 0, balanceUsd: 0.505 });
    }
  });

  it('learns an unknown balance one generation at a time across processes, then stops at the floor', async () => {
    const guards = await processes({ learningPollMs: 5 });
    const service = fakeService(0.535, PRICE);
    const outcomes = await everyone(guards, service);
    expect(outcomes.filter((o) => o === 'spoken')).toHaveLength(3);
    expect(service.balanceUsd).toBeGreaterThanOrEqual(0.5);
    expect(await guards[1]?.store.ledger()).toHaveLength(3);
  });

  it('holds one server’s daily cap across processes', async () => {
    const guards = await processes({
      account: { balanceUsd: 10, pricePerCharUsd: PRICE, priceCharacters: 100 },
    });
    await guards[0]?.guard.setDailyCap('g1', 0.05);
    const service = fakeService(10, PRICE);
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const guard = guards[i % PROCESSES]?.guard;
        if (!guard) throw new Error('no guard');
        return speak(guard, service, req(100, `m${i}`, 'g1'), (i * 3) % 4);
      }),
    );
    expect(outcomes.filter((o) => o === 'spoken')).toHaveLength(5);
    expect(outcomes.filter((o) => o === 'daily-cap')).toHaveLength(35);
    const spend = await guards[3]?.guard.spendToday('g1');
    expect(spend?.usd).toBeCloseTo(0.05, 12);
    expect(service.charges).toHaveLength(5);
  });

  it('a stop after a 402 in one process refuses in every other at once, and one re-check resumes them all', async () => {
    const guards = await processes({
      account: { balanceUsd: 10, pricePerCharUsd: PRICE, priceCharacters: 100 },
    });
    const [a, b] = guards;
    if (!a || !b) throw new Error('no guards');
    const service = fakeService(0.001, PRICE); // the real balance is far lower than Herald believes
    expect(await speak(a.guard, service, req(100), 0)).toBe('service-refused');
    expect(await b.guard.check(req(1))).toMatchObject({ kind: 'blocked', reason: 'service-refused' });
    service.balanceUsd = 5;
    const outcome = await b.guard.recheck(async () => ({ ...service.charge(1), characters: 1 }), {
      guildId: 'herald',
      userId: 'herald',
    });
    expect(outcome.kind).toBe('resumed');
    for (const { guard } of guards) expect(await guard.check(req(100))).toEqual({ kind: 'ok' });
    expect(a.alerts.map((alert) => alert.kind)).toEqual(['blocked']);
    expect(b.alerts.map((alert) => alert.kind)).toEqual(['resumed']);
  });

  it('reconciles the reservation of a process that died after a bounded time, and records a late settlement once', async () => {
    const ttl = 60_000;
    const account = { balanceUsd: 0.525, pricePerCharUsd: PRICE, priceCharacters: 100 };
    const guards = await processes({ account, reservationTtlMs: ttl });
    const [dead, alive] = guards;
    if (!dead || !alive) throw new Error('no guards');
    const service = fakeService(0.525, PRICE);
    // Two utterances fit above the floor; the process holding one of them dies before its call settles.
    const held = await dead.guard.reserve(req(100, 'm1'));
    expect(held.kind).toBe('reserved');
    alive.clock.now = NOON + ttl / 2;
    const second = await alive.guard.reserve(req(100, 'm2'));
    expect(second.kind).toBe('reserved');
    expect((await alive.guard.reserve(req(100, 'm3'))).kind).toBe('would-cross-floor');
    // Past the TTL, the dead process's reservation is an uncertain ledger row at its estimate: it may have been
    // charged, so the known balance is taken down by it until the service says otherwise.
    alive.clock.now = NOON + ttl;
    expect((await alive.guard.reserve(req(100, 'm3'))).kind).toBe('would-cross-floor');
    expect(await alive.guard.status()).toMatchObject({
      inFlight: 1,
      balanceUsd: 0.515,
      uncertain: { generations: 1, upToUsd: 0.01 },
    });
    // The next balance the service reports settles it: the dead call was never charged, so m3 fits again.
    if (second.kind !== 'reserved') throw new Error('unreachable');
    await alive.guard.settle(second.reservation, service.charge(100));
    expect((await alive.guard.reserve(req(100, 'm3'))).kind).toBe('reserved');
    // Had it only been slow, its settlement replaces the uncertain row, once, however often it is retried.
    if (held.kind !== 'reserved') throw new Error('unreachable');
    const settlement = { costUsd: 0.01, balanceUsd: 0.505, requestId: 'late' };
    expect(await dead.guard.settle(held.reservation, settlement)).toBeTypeOf('number');
    expect(await dead.guard.settle(held.reservation, settlement)).toBeUndefined();
    const ledger = await alive.store.ledger();
    expect(ledger.map((row) => row.uncertain)).toEqual([false, false]);
    expect(ledger[0]).toMatchObject({ userId: 'm1', requestId: 'late', costUsd: 0.01 });
    expect(await alive.guard.status()).toMatchObject({ uncertain: { generations: 0, upToUsd: 0 } });
  });

  it('a process that restarts reconciles at once what its previous run left in flight', async () => {
    const target = await backend.fresh();
    const account = { balanceUsd: 1, pricePerCharUsd: PRICE, priceCharacters: 100 };
    const options = { target, pricePerCharUsd: PRICE, floorUsd: 0.5 };
    const before = await makeGuard({ ...options, account, owner: 'host#0' });
    expect((await before.guard.reserve(req(100, 'm1'))).kind).toBe('reserved');
    // Another process (another owner) has one in flight too.
    const other = await makeGuard({ ...options, owner: 'host#1' });
    expect((await other.guard.reserve(req(100, 'm2'))).kind).toBe('reserved');
    // host#0 is killed and starts again, long before its reservation would expire: it reconciles its own at
    // once, as an uncertain row taken off the known balance, and leaves host#1's alone.
    const after = await makeGuard({ ...options, owner: 'host#0', start: NOON + 1_000 });
    expect(await after.guard.status()).toMatchObject({
      inFlight: 1,
      balanceUsd: 0.99,
      uncertain: { generations: 1, upToUsd: 0.01 },
    });
    expect((await after.store.ledger()).map((row) => [row.userId, row.uncertain])).toEqual([['m1', true]]);
  });
});
