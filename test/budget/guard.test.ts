import { describe, expect, it, vi } from 'vitest';
import {
  type BudgetRefusal,
  describeRefusal,
  formatUsd,
  learnPrice,
  type Reservation,
} from '../../src/budget/index.ts';
import { TtsAbortedError, TtsInsufficientBalanceError, TtsServiceError } from '../../src/tts/index.ts';
import { describeEachBackend } from '../support/databases.ts';
import {
  fakeService,
  type GuardTestOptions,
  makeGuard as makeGuardOn,
  NOON,
  req,
  speakOnce,
} from './helpers.ts';

const PRICE = 0.0001;

describeEachBackend('budget guard', (backend) => {
  const makeGuard = (options: GuardTestOptions = {}) => makeGuardOn({ backend, ...options });

  describe('the floor', () => {
    // Balance, request sizes repeated until refused, how many are spoken, the refusal that stops them.
    it.each([
      { balance: 0.53, characters: 100, spoken: 3, stop: 'blocked' },
      { balance: 0.535, characters: 100, spoken: 3, stop: 'would-cross-floor' },
      { balance: 0.5001, characters: 1, spoken: 1, stop: 'blocked' },
      { balance: 0.5, characters: 1, spoken: 0, stop: 'blocked' },
      { balance: 0.505, characters: 100, spoken: 0, stop: 'would-cross-floor' },
      { balance: 0.99, characters: 700, spoken: 7, stop: 'blocked' },
      { balance: 0.995, characters: 700, spoken: 7, stop: 'would-cross-floor' },
      { balance: 0.51, characters: 101, spoken: 0, stop: 'would-cross-floor' },
    ])(
      'balance $balance, $characters characters each: $spoken spoken, then $stop',
      async ({ balance, characters, spoken, stop }) => {
        const { guard } = await makeGuard({
          account: { balanceUsd: balance, pricePerCharUsd: PRICE, priceCharacters: 1 },
        });
        const service = fakeService(balance, PRICE);
        let count = 0;
        let outcome = await speakOnce(guard, service, req(characters));
        while (outcome === 'spoken') {
          count += 1;
          outcome = await speakOnce(guard, service, req(characters));
        }
        expect(count).toBe(spoken);
        expect(outcome).toBe(stop);
        expect(service.balanceUsd).toBeGreaterThanOrEqual(0.5);
        // Exactly where the next request would cross: one more of the same size would have taken it below.
        expect(service.balanceUsd - characters * PRICE).toBeLessThan(0.5);
        expect(service.charges).toHaveLength(spoken);
      },
    );

    it('enters and persists the blocked state once even the cheapest request would cross', async () => {
      const target = await backend.fresh();
      const { guard, alerts, clock } = await makeGuard({
        target,
        account: { balanceUsd: 0.52, pricePerCharUsd: PRICE, priceCharacters: 100 },
      });
      const service = fakeService(0.52, PRICE);
      expect(await speakOnce(guard, service, req(100))).toBe('spoken');
      clock.now += 5_000;
      expect(await speakOnce(guard, service, req(100))).toBe('spoken');
      const refusal = await guard.check(req(1));
      expect(refusal).toMatchObject({
        kind: 'blocked',
        reason: 'floor-reached',
        balanceUsd: 0.5,
        floorUsd: 0.5,
      });
      expect(await guard.status()).toMatchObject({
        status: 'blocked',
        reason: 'floor-reached',
        since: NOON + 5_000,
      });
      expect(alerts).toEqual([{ kind: 'blocked', reason: 'floor-reached', balanceUsd: 0.5, floorUsd: 0.5 }]);

      const reopened = await makeGuard({ target });
      expect(await reopened.guard.check(req(1))).toMatchObject({ kind: 'blocked', reason: 'floor-reached' });
    });

    it('does not block on an unknown balance: the first request goes through and teaches it', async () => {
      const { guard } = await makeGuard({ pricePerCharUsd: PRICE });
      const service = fakeService(3, PRICE);
      expect(await guard.check(req(100))).toEqual({ kind: 'ok' });
      expect(await speakOnce(guard, service, req(100))).toBe('spoken');
      expect(await guard.status()).toMatchObject({ balanceUsd: 2.99, balanceSeenAt: NOON, status: 'active' });
    });
  });

  describe('concurrency', () => {
    it('fifty simultaneous reservations near the floor never overshoot it together', async () => {
      const fresh = (
        await makeGuard({
          account: { balanceUsd: 0.535, pricePerCharUsd: PRICE, priceCharacters: 100 },
        })
      ).guard;
      const service = fakeService(0.535, PRICE);
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, (_, i) => fresh.reserve(req(100, `m${i}`, `g${i % 5}`))),
      );
      const reserved = outcomes.flatMap((o) => (o.kind === 'reserved' ? [o.reservation] : []));
      expect(reserved).toHaveLength(3);
      expect(outcomes.filter((o) => o.kind === 'would-cross-floor')).toHaveLength(47);
      expect(await fresh.status()).toMatchObject({ inFlight: 3, reservedUsd: 0.03 });
      // Settled in reverse order, as responses may arrive.
      for (const reservation of reserved.reverse()) await fresh.settle(reservation, service.charge(100));
      expect(service.balanceUsd).toBeCloseTo(0.505, 9);
      expect(await fresh.status()).toMatchObject({ inFlight: 0, reservedUsd: 0, balanceUsd: 0.505 });
    });

    it('while the price and balance are unknown, lets one generation through and makes the others wait', async () => {
      const { guard } = await makeGuard();
      const service = fakeService(0.535, PRICE);
      const first = await guard.reserve(req(100));
      expect(first.kind).toBe('reserved');
      expect(await guard.reserve(req(100, 'm2'))).toEqual({ kind: 'learning' });
      // /speak's pre-check does not refuse for learning.
      expect(await guard.check(req(100, 'm2'))).toEqual({ kind: 'ok' });

      const waiting = Array.from({ length: 49 }, (_, i) => guard.acquire(req(100, `w${i}`)));
      await Promise.resolve();
      expect((await guard.status()).inFlight).toBe(1);
      if (first.kind !== 'reserved') throw new Error('unreachable');
      await guard.settle(first.reservation, service.charge(100));
      const outcomes = await Promise.all(waiting);
      const reserved = outcomes.flatMap((o) => (o.kind === 'reserved' ? [o.reservation] : []));
      // 0.525 left, floor 0.5: two more at 0.01.
      expect(reserved).toHaveLength(2);
      for (const reservation of reserved) await guard.settle(reservation, service.charge(100));
      expect(service.balanceUsd).toBeGreaterThanOrEqual(0.5);
      expect((await guard.status()).priceSource).toBe('learned');
    });

    it('fifty concurrent acquisitions on a fresh database stay at or above the floor', async () => {
      const { guard } = await makeGuard();
      const service = fakeService(0.535, PRICE);
      const results = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const outcome = await guard.acquire(req(100, `m${i}`));
          if (outcome.kind !== 'reserved') return outcome.kind;
          // Responses come back in a scrambled order.
          for (let tick = 0; tick < (i * 7) % 5; tick++)
            await new Promise((resolve) => setImmediate(resolve));
          await guard.settle(outcome.reservation, service.charge(100));
          return 'spoken';
        }),
      );
      expect(results.filter((r) => r === 'spoken')).toHaveLength(3);
      expect(service.balanceUsd).toBeGreaterThanOrEqual(0.5);
      expect(service.balanceUsd).toBeCloseTo(0.505, 9);
    });

    it('an aborted wait rejects and leaves nothing reserved', async () => {
      const { guard } = await makeGuard();
      const first = await guard.reserve(req(10));
      const controller = new AbortController();
      const waiting = guard.acquire(req(10, 'm2'), controller.signal);
      controller.abort();
      await expect(waiting).rejects.toBeInstanceOf(TtsAbortedError);
      expect((await guard.status()).inFlight).toBe(1);
      if (first.kind === 'reserved') await guard.release(first.reservation, new TtsServiceError('boom'));
      expect((await guard.status()).inFlight).toBe(0);
    });
  });

  describe('a burst whose settlements trail its charges', () => {
    // The service charges as it answers, so a balance one response reports may already include generations whose
    // settlements have not been recorded yet. Price 0.0001 a character: 2,000 characters cost $0.20; floor $0.50.
    const twoInFlightThenOneSettles = async (reportedUsd: number) => {
      const made = await makeGuard({
        account: { balanceUsd: 1, pricePerCharUsd: PRICE, priceCharacters: 100 },
        learningPollMs: 5,
        settlingWaitMs: 1_000,
      });
      const { guard, clock } = made;
      const a = await guard.reserve(req(2000, 'm1'));
      const b = await guard.reserve(req(2000, 'm2'));
      if (a.kind !== 'reserved' || b.kind !== 'reserved') throw new Error('expected reservations');
      clock.now += 10;
      await guard.settle(a.reservation, { costUsd: 0.2, balanceUsd: reportedUsd, requestId: 'a' });
      clock.now += 10;
      return { ...made, b: b.reservation };
    };

    it('waits for the generations in flight instead of counting a charge the balance already holds twice', async () => {
      // A's response reports $0.60: both A and B were charged. $0.10 more fits ($0.50 left), though B still looks open.
      const { guard, b } = await twoInFlightThenOneSettles(0.6);
      expect(await guard.reserve(req(1000, 'm3'))).toMatchObject({
        kind: 'settling',
        refusal: { kind: 'would-cross-floor', balanceUsd: 0.6, reservedUsd: 0.2 },
      });
      expect(await guard.check(req(1000, 'm3'))).toEqual({ kind: 'ok' });
      const waiting = guard.acquire(req(1000, 'm3'));
      await guard.settle(b, { costUsd: 0.2, balanceUsd: 0.6, requestId: 'b' });
      expect((await waiting).kind).toBe('reserved');
      expect(await guard.status()).toMatchObject({ balanceUsd: 0.6, inFlight: 1, reservedUsd: 0.1 });
    });

    it('refuses once they settle when the balance did not hold their charges, so the floor still holds', async () => {
      // A's response reports $0.80: only A was charged. $0.20 more fits only if B was charged already; it was not.
      const { guard, b } = await twoInFlightThenOneSettles(0.8);
      const waiting = guard.acquire(req(2000, 'm3'));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await guard.settle(b, { costUsd: 0.2, balanceUsd: 0.6, requestId: 'b' });
      expect(await waiting).toMatchObject({ kind: 'would-cross-floor', balanceUsd: 0.6, reservedUsd: 0 });
      expect((await guard.status()).inFlight).toBe(0);
    });

    it('refuses after the settling wait when a generation in flight never settles, without taking the lock meanwhile', async () => {
      const { guard, store, clock } = await twoInFlightThenOneSettles(0.6);
      const locked = vi.spyOn(store, 'locked');
      const waiting = guard.acquire(req(1000, 'm3'));
      // About ten polls of 5 ms: while nothing settles, each looks with plain reads.
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(locked).toHaveBeenCalledTimes(1);
      clock.now += 1_000;
      expect(await waiting).toMatchObject({ kind: 'would-cross-floor', balanceUsd: 0.6, reservedUsd: 0.2 });
      expect(locked).toHaveBeenCalledTimes(2);
      expect((await guard.status()).inFlight).toBe(1);
    });

    it('counts in full what was reserved after the balance was seen: those charges cannot be in it', async () => {
      const { guard, b, clock } = await twoInFlightThenOneSettles(0.6);
      await guard.settle(b, { costUsd: 0.2, balanceUsd: 0.6, requestId: 'b' });
      clock.now += 10;
      expect((await guard.reserve(req(500, 'm3'))).kind).toBe('reserved');
      // $0.60 − $0.05 in flight − $0.10 < $0.50, and the $0.05 was reserved after $0.60 was seen.
      expect((await guard.reserve(req(1000, 'm4'))).kind).toBe('would-cross-floor');
    });
  });

  describe('a call that got no answer', () => {
    it('records an uncertain row at its estimate when the request reached the service, and nothing when not', async () => {
      const account = { balanceUsd: 1, pricePerCharUsd: PRICE, priceCharacters: 100 };
      const { guard, store } = await makeGuard({ account });
      const outcomes = await Promise.all([guard.reserve(req(100)), guard.reserve(req(100, 'm2'))]);
      const [sent, unsent] = outcomes.map((o) => (o.kind === 'reserved' ? o.reservation : undefined));
      if (!sent || !unsent) throw new Error('not reserved');
      // Aborted after the request was sent (e.g. a /skip while waiting for the headers): it may have been charged.
      await guard.release(sent, new TtsAbortedError('aborted', { requestSent: true }));
      // Refused with an answer, and aborted before sending: the service cannot have charged.
      await guard.release(unsent, new TtsAbortedError('aborted', { requestSent: false }));
      expect((await store.ledger()).map((row) => [row.userId, row.uncertain, row.estimatedCostUsd])).toEqual([
        ['m1', true, 0.01],
      ]);
      expect(await guard.status()).toMatchObject({
        inFlight: 0,
        balanceUsd: 0.99,
        uncertain: { generations: 1, upToUsd: 0.01 },
      });
      const third = await guard.reserve(req(100, 'm3'));
      if (third.kind !== 'reserved') throw new Error('not reserved');
      await guard.release(third.reservation, new TtsServiceError('500', { status: 500 }));
      expect(await store.ledger()).toHaveLength(1);
    });
  });

  describe('a service refusal (402)', () => {
    it('blocks at once, refuses before any call, and stays blocked after reopening the database', async () => {
      const target = await backend.fresh();
      const { guard, alerts } = await makeGuard({
        target,
        pricePerCharUsd: PRICE,
      });
      const reserved = await guard.reserve(req(100));
      if (reserved.kind !== 'reserved') throw new Error('expected a reservation');
      await guard.release(
        reserved.reservation,
        new TtsInsufficientBalanceError('cannot pay', { status: 402, balanceUsd: 0.004 }),
      );
      const refusal = await guard.check(req(1));
      expect(refusal).toMatchObject({ kind: 'blocked', reason: 'service-refused', balanceUsd: 0.004 });
      expect((await guard.reserve(req(1))).kind).toBe('blocked');
      expect(alerts).toEqual([
        { kind: 'blocked', reason: 'service-refused', balanceUsd: 0.004, floorUsd: 0.5 },
      ]);

      const restarted = await makeGuard({ target });
      expect(await restarted.guard.check(req(1))).toMatchObject({
        kind: 'blocked',
        reason: 'service-refused',
      });
      expect(await restarted.guard.status()).toMatchObject({ status: 'blocked', balanceUsd: 0.004 });
    });

    it('other errors only free the reservation', async () => {
      const { guard } = await makeGuard({ pricePerCharUsd: PRICE });
      const reserved = await guard.reserve(req(100));
      if (reserved.kind !== 'reserved') throw new Error('expected a reservation');
      await guard.release(reserved.reservation, new TtsServiceError('500', { status: 500 }));
      expect(await guard.status()).toMatchObject({ status: 'active', inFlight: 0 });
    });
  });

  describe('recheck', () => {
    const blockedGuard = async () => {
      const made = await makeGuard({ pricePerCharUsd: PRICE });
      const reserved = await made.guard.reserve(req(100));
      if (reserved.kind !== 'reserved') throw new Error('expected a reservation');
      await made.guard.release(
        reserved.reservation,
        new TtsInsufficientBalanceError('no', { balanceUsd: 0.01 }),
      );
      return made;
    };

    it('stays blocked while the probed balance is not above the floor, resumes once it is', async () => {
      const { guard, store, alerts } = await blockedGuard();
      const service = fakeService(0.45, PRICE);
      const probe = async () => ({ ...service.charge(1), characters: 1 });
      expect(await guard.recheck(probe, { guildId: 'g1', userId: 'owner' })).toEqual({
        kind: 'still-blocked',
        balanceUsd: 0.4499,
        floorUsd: 0.5,
      });
      expect((await guard.check(req(1))).kind).toBe('blocked');

      service.balanceUsd = 5; // the operator tops up
      expect(await guard.recheck(probe, { guildId: 'g1', userId: 'owner' })).toEqual({
        kind: 'resumed',
        balanceUsd: 4.9999,
        floorUsd: 0.5,
      });
      expect(await guard.check(req(100))).toEqual({ kind: 'ok' });
      expect(alerts.at(-1)).toEqual({ kind: 'resumed', balanceUsd: 4.9999, floorUsd: 0.5 });
      expect(
        (await store.ledger()).map((row) => [row.kind, row.userId, row.characters, row.costUsd]),
      ).toEqual([
        ['probe', 'owner', 1, PRICE],
        ['probe', 'owner', 1, PRICE],
      ]);
    });

    it('a probe refused for lack of credit leaves it blocked', async () => {
      const { guard } = await blockedGuard();
      const probe = async () => {
        throw new TtsInsufficientBalanceError('no', { status: 402, balanceUsd: 0 });
      };
      expect(await guard.recheck(probe, { guildId: 'g1', userId: 'owner' })).toMatchObject({
        kind: 'still-blocked',
        balanceUsd: 0,
      });
      expect((await guard.status()).status).toBe('blocked');
    });

    it('rethrows other probe failures and frees its reservation', async () => {
      const { guard } = await blockedGuard();
      const probe = async () => {
        throw new TtsServiceError('down', { status: 503 });
      };
      await expect(guard.recheck(probe, { guildId: 'g1', userId: 'owner' })).rejects.toBeInstanceOf(
        TtsServiceError,
      );
      expect(await guard.status()).toMatchObject({ status: 'blocked', inFlight: 0 });
    });

    it('refreshes the balance when nothing was blocked, trusting a higher figure', async () => {
      const fresh = (
        await makeGuard({
          account: { balanceUsd: 1, pricePerCharUsd: PRICE, priceCharacters: 100 },
        })
      ).guard;
      const outcome = await fresh.recheck(
        async () => ({ costUsd: PRICE, balanceUsd: 7, requestId: 'r', characters: 1 }),
        {
          guildId: 'g1',
          userId: 'owner',
        },
      );
      expect(outcome).toEqual({ kind: 'active', balanceUsd: 7, floorUsd: 0.5 });
    });
  });

  describe('fairness', () => {
    it('a server over its daily cap is refused with its own kind; other servers and the next UTC day are not', async () => {
      const { guard, clock } = await makeGuard({ pricePerCharUsd: PRICE });
      const service = fakeService(10, PRICE);
      await guard.setDailyCap('g1', 0.02);
      expect(await speakOnce(guard, service, req(100))).toBe('spoken');
      // Reserved but not settled yet still counts against the cap.
      const inFlight = await guard.reserve(req(100, 'm2'));
      expect(inFlight.kind).toBe('reserved');
      const refusal = await guard.check(req(100, 'm3'));
      expect(refusal).toMatchObject({ kind: 'daily-cap', guildId: 'g1', spentUsd: 0.02, capUsd: 0.02 });
      expect(refusal).toMatchObject({ resetsAt: Date.UTC(2026, 0, 16) });
      expect(await guard.check(req(100, 'm3', 'g2'))).toEqual({ kind: 'ok' });

      if (inFlight.kind === 'reserved') await guard.settle(inFlight.reservation, service.charge(100));
      expect(await guard.spendToday('g1')).toMatchObject({ usd: 0.02, generations: 2, characters: 200 });
      clock.now = Date.UTC(2026, 0, 16, 0, 0, 1);
      expect(await guard.check(req(100))).toEqual({ kind: 'ok' });
      await guard.setDailyCap('g1', null);
      expect((await guard.guildSettings('g1')).dailyCapUsd).toBeNull();
    });

    it('a member over the rate limit is refused with its own kind and told when to retry', async () => {
      const { guard, clock } = await makeGuard({ pricePerCharUsd: PRICE, memberCharsPerMinute: 250 });
      const service = fakeService(10, PRICE);
      expect(await speakOnce(guard, service, req(100))).toBe('spoken');
      clock.now += 20_000;
      expect(await speakOnce(guard, service, req(100, 'm1', 'g2'))).toBe('spoken');
      clock.now += 10_000;
      const refusal = await guard.check(req(100));
      expect(refusal).toMatchObject({
        kind: 'member-rate',
        userId: 'm1',
        usedCharacters: 200,
        limitPerMinute: 250,
        retryAfterMs: 30_000,
      });
      expect(await guard.check(req(50))).toEqual({ kind: 'ok' });
      expect(await guard.check(req(100, 'm2'))).toEqual({ kind: 'ok' });
      // Longer than the limit: no wait would help.
      expect(await guard.check(req(251, 'm9'))).toMatchObject({
        kind: 'member-rate',
        retryAfterMs: undefined,
      });
      // Open reservations count too.
      const open = await guard.reserve(req(50));
      expect(open.kind).toBe('reserved');
      expect((await guard.check(req(1))).kind).toBe('member-rate');
      clock.now += 30_001;
      expect((await guard.check(req(100))).kind).toBe('ok');
    });
  });

  describe('price and balance learning', () => {
    it('uses the configured price until the service reports costs, then the learned one (persisted)', async () => {
      const target = await backend.fresh();
      const { guard } = await makeGuard({
        target,
        pricePerCharUsd: 0.0002,
      });
      expect(await guard.status()).toMatchObject({ pricePerCharUsd: 0.0002, priceSource: 'configured' });
      const reserved = await guard.reserve(req(100));
      if (reserved.kind !== 'reserved') throw new Error('expected a reservation');
      expect(reserved.reservation.estimateUsd).toBe(0.02);
      await guard.settle(reserved.reservation, { costUsd: 0.01, balanceUsd: 9.99, requestId: 'r1' });
      expect(await guard.status()).toMatchObject({ pricePerCharUsd: 0.0001, priceSource: 'learned' });
      const reopened = await makeGuard({ target, pricePerCharUsd: 0.0002 });
      expect(await reopened.guard.status()).toMatchObject({
        pricePerCharUsd: 0.0001,
        priceSource: 'learned',
      });
    });

    it('assumes a high price until one is configured or learned, so estimates never count as free', async () => {
      const { guard } = await makeGuard();
      expect(await guard.status()).toMatchObject({ priceSource: 'assumed', pricePerCharUsd: 0.0003 });
      expect(guard.estimateUsd(100)).toBeCloseTo(0.03, 12);
      expect((await makeGuard({ pricePerCharUsd: 0.0001 })).guard.estimateUsd(300)).toBe(0.03);
    });

    const base = {
      balanceUsd: null,
      balanceSeenAt: null,
      blockedSince: null,
      blockedReason: null,
      warned: false,
    } as const;
    it.each([
      { name: 'first figure', known: null, knownChars: null, cost: 0.0009, chars: 7, price: 0.0009 / 7 },
      // 7 characters at 0.0000123 cost 86.1 µ$, billed 86 µ$: the 1000-character figure is the better one.
      {
        name: 'keeps the more precise',
        known: 0.0000123,
        knownChars: 1000,
        cost: 0.000086,
        chars: 7,
        price: 0.0000123,
      },
      {
        name: 'takes a longer text',
        known: 0.0000123,
        knownChars: 7,
        cost: 0.0123,
        chars: 1000,
        price: 0.0000123,
      },
      {
        name: 'a price change replaces it',
        known: 0.0001,
        knownChars: 1000,
        cost: 0.0002,
        chars: 1,
        price: 0.0002,
      },
    ])('learnPrice: $name', async ({ known, knownChars, cost, chars, price }) => {
      const learned = learnPrice(
        { ...base, pricePerCharUsd: known, priceCharacters: knownChars },
        cost,
        chars,
      );
      expect(learned.pricePerCharUsd).toBeCloseTo(price, 12);
    });
  });

  describe('out-of-order settlement', () => {
    const twoInFlight = async () => {
      const { guard } = await makeGuard({
        account: { balanceUsd: 1, pricePerCharUsd: PRICE, priceCharacters: 100 },
      });
      const a = await guard.reserve(req(100));
      const b = await guard.reserve(req(100, 'm2'));
      if (a.kind !== 'reserved' || b.kind !== 'reserved') throw new Error('expected reservations');
      return { guard, a: a.reservation, b: b.reservation };
    };

    it('does not trust a higher balance from a generation that overlapped others', async () => {
      const { guard, a, b } = await twoInFlight();
      // The service charged A then B; B's response arrives first.
      await guard.settle(b, { costUsd: 0.01, balanceUsd: 0.98, requestId: 'b' });
      await guard.settle(a, { costUsd: 0.01, balanceUsd: 0.99, requestId: 'a' });
      expect((await guard.status()).balanceUsd).toBe(0.98);
    });

    it('trusts a higher balance from a generation that ran alone (a top-up between requests)', async () => {
      const fresh = (
        await makeGuard({
          account: { balanceUsd: 1, pricePerCharUsd: PRICE, priceCharacters: 100 },
        })
      ).guard;
      const alone = await fresh.reserve(req(100));
      if (alone.kind !== 'reserved') throw new Error('expected a reservation');
      await fresh.settle(alone.reservation, { costUsd: 0.01, balanceUsd: 20, requestId: 'x' });
      expect((await fresh.status()).balanceUsd).toBe(20);
    });

    it('a second settle of the same reservation changes nothing', async () => {
      const { guard, a, b } = await twoInFlight();
      await guard.settle(a, { costUsd: 0.01, balanceUsd: 0.99, requestId: 'a' });
      await guard.settle(a, { costUsd: 0.01, balanceUsd: 0.5, requestId: 'a' });
      await guard.release(b, new TtsServiceError('x'));
      expect(await guard.status()).toMatchObject({ balanceUsd: 0.99, inFlight: 0 });
    });
  });

  describe('the ledger', () => {
    it('holds one row per settlement with server, member, characters, cost, balance after, request id and time', async () => {
      const { guard, store, clock } = await makeGuard({ pricePerCharUsd: PRICE });
      const service = fakeService(10, PRICE);
      const settled: Reservation[] = [];
      for (const [characters, user, server] of [
        [100, 'm1', 'g1'],
        [250, 'm2', 'g1'],
        [40, 'm1', 'g2'],
      ] as const) {
        const outcome = await guard.reserve(req(characters, user, server));
        if (outcome.kind !== 'reserved') throw new Error('expected a reservation');
        await guard.settle(outcome.reservation, service.charge(characters));
        settled.push(outcome.reservation);
        clock.now += 1_000;
      }
      expect((await store.ledger()).map(({ id: _id, day: _day, ...row }) => row)).toEqual([
        {
          kind: 'speech',
          guildId: 'g1',
          userId: 'm1',
          characters: 100,
          costUsd: 0.01,
          estimatedCostUsd: 0.01,
          balanceAfterUsd: 9.99,
          requestId: 'req-1',
          at: NOON,
          wasted: null,
          uncertain: false,
        },
        {
          kind: 'speech',
          guildId: 'g1',
          userId: 'm2',
          characters: 250,
          costUsd: 0.025,
          estimatedCostUsd: 0.025,
          balanceAfterUsd: 9.965,
          requestId: 'req-2',
          at: NOON + 1_000,
          wasted: null,
          uncertain: false,
        },
        {
          kind: 'speech',
          guildId: 'g2',
          userId: 'm1',
          characters: 40,
          costUsd: 0.004,
          estimatedCostUsd: 0.004,
          balanceAfterUsd: 9.961,
          requestId: 'req-3',
          at: NOON + 2_000,
          wasted: null,
          uncertain: false,
        },
      ]);
      const spend = await guard.spendToday('g1');
      expect(spend.usd).toBeCloseTo(0.035, 12);
      expect(spend.members).toEqual([
        { userId: 'm2', usd: 0.025, characters: 250, generations: 1 },
        { userId: 'm1', usd: 0.01, characters: 100, generations: 1 },
      ]);
      const charged = service.charges.reduce((sum, c) => sum + c.costUsd, 0);
      expect(spend.usd + (await guard.spendToday('g2')).usd).toBeCloseTo(charged, 12);
    });

    it('marks a settled row as wasted with the first reason given, and keeps it in the spend', async () => {
      const { guard, store } = await makeGuard({ pricePerCharUsd: PRICE });
      const service = fakeService(10, PRICE);
      const outcome = await guard.reserve(req(100));
      if (outcome.kind !== 'reserved') throw new Error('expected a reservation');
      const ledgerId = await guard.settle(outcome.reservation, service.charge(100));
      expect(ledgerId).toBeTypeOf('number');
      await guard.markWasted(ledgerId ?? -1, 'stop');
      await guard.markWasted(ledgerId ?? -1, 'left');
      expect(await store.ledger()).toMatchObject([{ id: ledgerId, wasted: 'stop', costUsd: 0.01 }]);
      expect((await guard.spendToday('g1')).usd).toBeCloseTo(0.01, 12);
    });

    it('falls back to the estimate when the service sends no cost', async () => {
      const { guard, store } = await makeGuard({ pricePerCharUsd: PRICE });
      const outcome = await guard.reserve(req(100));
      if (outcome.kind !== 'reserved') throw new Error('expected a reservation');
      await guard.settle(outcome.reservation, {
        costUsd: undefined,
        balanceUsd: undefined,
        requestId: undefined,
      });
      expect((await store.ledger())[0]).toMatchObject({
        costUsd: null,
        estimatedCostUsd: 0.01,
        balanceAfterUsd: null,
      });
      expect((await guard.spendToday('g1')).usd).toBe(0.01);
    });
  });

  describe('warnings', () => {
    it('warns once per crossing of the warning level, persisted, and again after a top-up', async () => {
      const target = await backend.fresh();
      const guard = await makeGuard({
        target,
        warnUsd: 0.6,
        account: { balanceUsd: 0.62, pricePerCharUsd: PRICE, priceCharacters: 100 },
      });
      const service = fakeService(0.62, PRICE);
      await speakOnce(guard.guard, service, req(100)); // 0.61
      expect(guard.alerts).toEqual([]);
      await speakOnce(guard.guard, service, req(100)); // 0.60: reached
      expect(guard.alerts).toEqual([{ kind: 'warn', balanceUsd: 0.6, warnUsd: 0.6, floorUsd: 0.5 }]);
      await speakOnce(guard.guard, service, req(100)); // 0.59
      expect(guard.alerts).toHaveLength(1);

      const restarted = await makeGuard({ target, warnUsd: 0.6 });
      await speakOnce(restarted.guard, service, req(100)); // 0.58: still the same crossing
      expect(restarted.alerts).toEqual([]);
      service.balanceUsd = 2;
      await restarted.guard.recheck(async () => ({ ...service.charge(1), characters: 1 }), {
        guildId: 'g1',
        userId: 'owner',
      });
      expect((await restarted.store.account()).warned).toBe(false);
      restarted.alerts.length = 0;
      for (let i = 0; i < 140; i++) await speakOnce(restarted.guard, service, req(100)); // 1.9999 down to 0.5999
      expect(restarted.alerts).toEqual([{ kind: 'warn', balanceUsd: 0.5999, warnUsd: 0.6, floorUsd: 0.5 }]);
    });

    it('a block alerts once, without a separate warning', async () => {
      const { guard, alerts } = await makeGuard({
        warnUsd: 0.6,
        account: { balanceUsd: 0.61, pricePerCharUsd: PRICE, priceCharacters: 100 },
      });
      const service = fakeService(0.61, PRICE);
      await speakOnce(guard, service, req(1100)); // 0.50
      expect(alerts).toEqual([{ kind: 'blocked', reason: 'floor-reached', balanceUsd: 0.5, floorUsd: 0.5 }]);
    });
  });
});

describe('describeRefusal', () => {
  const cases: [BudgetRefusal, string][] = [
    [
      { kind: 'blocked', reason: 'floor-reached', since: NOON, balanceUsd: 0.52, floorUsd: 0.5 },
      'Herald has stopped speaking: the account balance ($0.52) has reached the floor the operator set ($0.50).',
    ],
    [
      { kind: 'blocked', reason: 'service-refused', since: NOON, balanceUsd: undefined, floorUsd: 0.5 },
      'Herald has stopped speaking: the speech service refused a request for lack of credit (balance unknown; the floor the operator set is $0.50). Herald resumes by itself once the operator tops up (it checks again every few minutes).',
    ],
    [
      { kind: 'would-cross-floor', balanceUsd: 0.52, reservedUsd: 0.01, estimateUsd: 0.015, floorUsd: 0.5 },
      'Herald can’t say this: it would cost about $0.015 and take the account balance ($0.52, with $0.01 already committed,) below the floor the operator set ($0.50). A shorter message may still fit.',
    ],
    [
      {
        kind: 'daily-cap',
        guildId: 'g',
        spentUsd: 1,
        estimateUsd: 0.01,
        capUsd: 1,
        resetsAt: Date.UTC(2026, 0, 16),
      },
      `This server has used its daily speech budget: $1.00 of $1.00 spent today (UTC), and this would cost about $0.01. It resets <t:${Date.UTC(2026, 0, 16) / 1000}:R>.`,
    ],
    [
      {
        kind: 'member-rate',
        userId: 'u',
        usedCharacters: 1200,
        characters: 100,
        limitPerMinute: 1000,
        retryAfterMs: 22_500,
      },
      'You are speaking faster than the 1,000 characters a minute one member may use (1,200 in the last minute). Try again in 23 s.',
    ],
    [
      {
        kind: 'member-rate',
        userId: 'u',
        usedCharacters: 0,
        characters: 1500,
        limitPerMinute: 1000,
        retryAfterMs: undefined,
      },
      'That message is 1,500 characters, more than the 1,000 characters a minute one member may use. Send a shorter one.',
    ],
  ];
  it.each(cases)('%o', async (refusal, sentence) => {
    expect(describeRefusal(refusal)).toBe(sentence);
  });

  it.each([
    [0.52, '$0.52'],
    [0.5, '$0.50'],
    [1, '$1.00'],
    [0.5003, '$0.5003'],
    [0.0001, '$0.0001'],
    [0.000015, '$0.000015'],
    [12.3456789, '$12.345679'],
    [-0.2, '-$0.20'],
  ])('formatUsd(%d) is %s', async (value, text) => {
    expect(formatUsd(value)).toBe(text);
  });
});
