/**
 * The budget guard: the one stateful part of the budget, created by `createBudgetGuard`. Its interface is in
 * `guard-types.ts`, the rules it applies in `rules.ts`.
 */
import { mayHaveCharged, TtsAbortedError, TtsInsufficientBalanceError } from '../tts/index.ts';
import { type BudgetAlert, reportAlerts } from './alerts.ts';
import type {
  BudgetGuard,
  BudgetGuardOptions,
  BudgetProbe,
  BudgetRequest,
  RecheckOutcome,
  Reservation,
  ReserveOutcome,
  Settlement,
} from './guard-types.ts';
import { fromNanos, toNanos } from './money.ts';
import { learnPrice } from './price.ts';
import { type AccountState, type StoredReservation, utcDay } from './records.ts';
import { createBudgetRules, MINUTE_MS } from './rules.ts';
import type { BudgetTransaction } from './store.ts';
import { writeLater } from './write-later.ts';

const DEFAULT_RESERVATION_TTL_MS = 5 * MINUTE_MS;
const DEFAULT_LEARNING_POLL_MS = 250;
const DEFAULT_SETTLING_WAIT_MS = 10_000;

/**
 * Creates the budget guard over a store. Every decision reads the account and every process's reservations from
 * the database inside one locked transaction, so several processes (shards, machines) share one budget: the
 * floor, the daily caps, the member rate limits, a stop after a 402 and its resumption are seen by all of them at
 * the next decision. Applies the floor and warning levels to the stored state first.
 */
export async function createBudgetGuard(options: BudgetGuardOptions): Promise<BudgetGuard> {
  const { store, floorUsd, warnUsd, memberCharsPerMinute } = options;
  const now = options.now ?? Date.now;
  const logger = options.logger;
  const ttlMs = options.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
  const pollMs = options.learningPollMs ?? DEFAULT_LEARNING_POLL_MS;
  const settlingWaitMs = options.settlingWaitMs ?? DEFAULT_SETTLING_WAIT_MS;
  const floorNanos = toNanos(floorUsd);
  let waiters: (() => void)[] = [];
  // The last account state this process read: only for estimates outside a decision (`estimateUsd`).
  let lastSeen: AccountState = await store.account();

  const { priceOf, estimateWith, learning, evaluate, withTransitions, onlyInFlightStandsInTheWay, stateOf } =
    createBudgetRules(options);
  const sumNanos = (reservations: readonly StoredReservation[]) =>
    reservations.reduce((sum, r) => sum + r.estimateNanos, 0);

  const alert = reportAlerts(logger, options.onAlert);

  const wake = (): void => {
    const woken = waiters;
    waiters = [];
    for (const resume of woken) resume();
  };

  /** {@link stateOf} for `request` now, read without the budget's lock. */
  const currentState = async (request: BudgetRequest): Promise<string> => {
    const account = await store.account();
    const open = await store.openTotals(now(), request.guildId, request.userId, account.balanceSeenAt);
    return stateOf(account, open);
  };

  const toReservation = (stored: StoredReservation): Reservation => ({
    id: stored.id,
    kind: stored.kind,
    guildId: stored.guildId,
    userId: stored.userId,
    characters: stored.characters,
    estimateUsd: fromNanos(stored.estimateNanos),
  });

  /**
   * Takes money that may have been charged (uncertain rows) off the known balance, failing closed: the next
   * balance the service reports settles the question. Saves and returns the account with its transitions.
   */
  const takeOffBalance = async (
    tx: BudgetTransaction,
    account: AccountState,
    nanos: number,
    at: number,
  ): Promise<{ state: AccountState; alerts: BudgetAlert[] }> => {
    if (account.balanceUsd === null) return { state: account, alerts: [] };
    const next = { ...account, balanceUsd: fromNanos(toNanos(account.balanceUsd) - nanos) };
    const decided = withTransitions(next, at);
    await tx.saveAccount(decided.state);
    return decided;
  };

  /**
   * Turns reservations whose process stopped into uncertain ledger rows (see {@link BudgetStore}), and takes their
   * estimates off the known balance, failing closed: the next balance the service reports settles the question.
   * Returns the account as it stands afterwards.
   */
  const reconcile = async (tx: BudgetTransaction, at: number, owner?: string): Promise<AccountState> => {
    const account = await tx.account();
    const left = await tx.reconcile(at, owner);
    if (left.length === 0) return account;
    const nanos = sumNanos(left);
    logger.warn('reconciled budget reservations a stopped process left unsettled, as uncertain ledger rows', {
      reservations: left.length,
      upToUsd: fromNanos(nanos),
    });
    const { state, alerts } = await takeOffBalance(tx, account, nanos, at);
    // Alerts outside the transaction would be nicer; these are rare and the handler must not throw anyway.
    for (const event of alerts) alert(event);
    return state;
  };

  const settleNow = async (reservation: Reservation, settlement: Settlement): Promise<number | undefined> => {
    try {
      const decided = await store.locked(async (tx) => {
        const at = now();
        const taken = await tx.takeReservation(reservation.id);
        if (!taken) {
          // Expired (its money was released, as for a dead process) or already settled: the ledger's unique
          // reservation id keeps a second settlement out, and an expired one is still recorded, once.
          logger.warn('budget reservation settled after it expired or twice', {
            reservation: reservation.id,
          });
        }
        const estimateNanos = taken?.estimateNanos ?? toNanos(reservation.estimateUsd);
        // A reservation that expired may have overlapped anything: its reported balance is not trusted upwards.
        const overlapped = taken?.overlapped ?? true;
        const account = await tx.account();
        const extra: BudgetAlert[] = [];
        let next = account;
        const { costUsd, balanceUsd } = settlement;
        if (costUsd !== undefined && reservation.characters > 0)
          next = learnPrice(next, costUsd, reservation.characters);
        if (balanceUsd !== undefined) {
          const known = next.balanceUsd;
          // The balance only falls between top-ups: a higher figure from a generation that overlapped others
          // may predate their charges, so it is not trusted. A probe's figure is the way a top-up is learned.
          const trusted =
            known === null || balanceUsd <= known || reservation.kind === 'probe' || !overlapped;
          if (trusted) next = { ...next, balanceUsd, balanceSeenAt: at };
          else logger.debug('ignored a stale higher balance', { reported: balanceUsd, known });
        } else if (next.balanceUsd !== null) {
          // Fail closed: no balance reported means the last known one, less what this generation cost (or was
          // estimated to), never "unknown, so fine".
          const spent = costUsd === undefined ? estimateNanos : toNanos(costUsd);
          next = { ...next, balanceUsd: fromNanos(toNanos(next.balanceUsd) - spent) };
          logger.warn('the TTS response carried no balance; deducted its cost from the last known one', {
            requestId: settlement.requestId,
          });
        } else if (floorNanos > 0 && next.blockedSince === null) {
          // A floor that can never be checked is no floor: stop, and say why.
          next = { ...next, blockedSince: at, blockedReason: 'balance-unknown' };
          extra.push({ kind: 'blocked', reason: 'balance-unknown', balanceUsd: undefined, floorUsd });
        }
        const { state, alerts } = withTransitions(next, at);
        const ledgerId = await tx.recordGeneration(
          {
            kind: reservation.kind,
            guildId: reservation.guildId,
            userId: reservation.userId,
            characters: reservation.characters,
            costUsd: costUsd ?? null,
            estimatedCostUsd: reservation.estimateUsd,
            balanceAfterUsd: balanceUsd ?? null,
            requestId: settlement.requestId ?? null,
            at,
          },
          reservation.id,
        );
        if (ledgerId === undefined) return { ledgerId, state: account, alerts: [] };
        await tx.saveAccount(state);
        return { ledgerId, state, alerts: [...extra, ...alerts] };
      });
      lastSeen = decided.state;
      for (const event of decided.alerts) alert(event);
      return decided.ledgerId;
    } finally {
      wake();
    }
  };

  const settle = async (
    reservation: Reservation,
    settlement: Settlement,
    onRecorded?: (ledgerId: number) => void,
  ): Promise<number | undefined> => {
    const write = async (): Promise<number | undefined> => {
      const ledgerId = await settleNow(reservation, settlement);
      if (ledgerId !== undefined) onRecorded?.(ledgerId);
      return ledgerId;
    };
    try {
      return await write();
    } catch (error) {
      later('settlement', reservation, error, write);
      return undefined;
    }
  };

  const release = async (reservation: Reservation, error: unknown): Promise<void> => {
    try {
      await releaseNow(reservation, error);
    } catch (failure) {
      later('release', reservation, failure, () => releaseNow(reservation, error));
    }
  };

  const later = (
    what: string,
    reservation: Reservation,
    error: unknown,
    write: () => Promise<unknown>,
  ): void =>
    writeLater({
      what,
      reservationId: reservation.id,
      error,
      write,
      forMs: ttlMs,
      logger,
      delaysMs: options.retryDelaysMs,
    });

  const releaseNow = async (reservation: Reservation, error: unknown): Promise<void> => {
    try {
      const decided = await store.locked(async (tx) => {
        const taken = await tx.takeReservation(reservation.id);
        if (!taken) {
          logger.warn('budget reservation released after it expired or twice', {
            reservation: reservation.id,
          });
        }
        const account = await tx.account();
        if (taken && mayHaveCharged(error)) {
          // The request reached the service and no answer came back (an abort, a timeout, a cut connection): it
          // may have been charged. An uncertain row at its estimate, taken off the known balance, fails closed.
          await tx.recordUncertain(taken);
          logger.warn('a generation that may have been charged got no answer; recorded as uncertain', {
            reservation: taken.id,
            upToUsd: fromNanos(taken.estimateNanos),
          });
          return takeOffBalance(tx, account, taken.estimateNanos, now());
        }
        if (!(error instanceof TtsInsufficientBalanceError)) return { state: account, alerts: [] };
        const balanceUsd = error.balanceUsd ?? account.balanceUsd ?? undefined;
        const at = now();
        const next: AccountState = {
          ...account,
          ...(error.balanceUsd === undefined ? {} : { balanceUsd: error.balanceUsd, balanceSeenAt: at }),
          ...(account.blockedSince === null
            ? { blockedSince: at, blockedReason: 'service-refused' as const }
            : {}),
        };
        await tx.saveAccount(next);
        const wasBlocked = account.blockedSince !== null;
        const alerts: BudgetAlert[] = wasBlocked
          ? []
          : [{ kind: 'blocked', reason: 'service-refused', balanceUsd, floorUsd }];
        return { state: next, alerts };
      });
      lastSeen = decided.state;
      for (const event of decided.alerts) alert(event);
    } finally {
      wake();
    }
  };

  const open = (request: BudgetRequest, kind: Reservation['kind']) =>
    store.locked(async (tx) => {
      const at = now();
      // Reservations of a process that died stop holding money once they expire: they become uncertain rows.
      const account = await reconcile(tx, at);
      lastSeen = account;
      if (kind === 'speech') {
        const open = await tx.openTotals(at, request.guildId, request.userId, account.balanceSeenAt);
        const refusal = await evaluate(tx, account, open, request, at);
        if (refusal && onlyInFlightStandsInTheWay(refusal, open))
          return { kind: 'settling', refusal, state: stateOf(account, open) } as const;
        if (refusal) return refusal;
        if (open.count > 0 && learning(account)) return { kind: 'learning' } as const;
      }
      const stored = await tx.addReservation({
        kind,
        guildId: request.guildId,
        userId: request.userId,
        characters: request.characters,
        estimateNanos: estimateWith(account, request.characters),
        createdAt: at,
        expiresAt: at + ttlMs,
        owner: options.owner ?? null,
      });
      return { kind: 'reserved', reservation: toReservation(stored) } as const;
    });

  const reserve = (request: BudgetRequest): Promise<ReserveOutcome> => open(request, 'speech');

  // What a previous run of this process left in flight (killed between a paid call and its settlement).
  if (options.owner !== undefined) {
    const owner = options.owner;
    lastSeen = await store.locked((tx) => reconcile(tx, now(), owner));
  }

  const nextWake = (signal: AbortSignal | undefined): Promise<void> =>
    new Promise((resolve, reject) => {
      // Another process's settlement wakes nobody here: look again after a short poll as well.
      const timer = setTimeout(() => resume(), pollMs);
      const onAbort = (): void => {
        clearTimeout(timer);
        waiters = waiters.filter((waiter) => waiter !== resume);
        reject(new TtsAbortedError());
      };
      const resume = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      waiters.push(resume);
      signal?.addEventListener('abort', onAbort, { once: true });
    });

  // The floor or warning level may have changed since the state was saved: apply them to it now.
  const startup = await store.locked(async (tx) => {
    const account = await tx.account();
    const changed = withTransitions(account, now());
    if (changed.state !== account) await tx.saveAccount(changed.state);
    return changed;
  });
  lastSeen = startup.state;
  for (const event of startup.alerts) alert(event);

  return {
    async check(request, queued) {
      const at = now();
      const account = await store.account();
      lastSeen = account;
      const open = await store.openTotals(at, request.guildId, request.userId, account.balanceSeenAt);
      const refusal = await evaluate(store, account, open, request, at, queued);
      // What waits for generations in flight to settle is not refused yet: `acquire` waits for them.
      if (!refusal || onlyInFlightStandsInTheWay(refusal, open)) return { kind: 'ok' };
      return refusal;
    },
    reserve,
    async acquire(request, signal) {
      const started = now();
      for (;;) {
        if (signal?.aborted) throw new TtsAbortedError();
        const outcome = await reserve(request);
        if (outcome.kind === 'settling' && now() - started >= settlingWaitMs) {
          logger.warn('generations in flight did not settle in time; the floor refusal stands', {
            waitedMs: now() - started,
          });
          return outcome.refusal;
        }
        if (outcome.kind === 'settling') {
          // Nothing changes the answer until a settlement, a release or an expiry changes what it was made on:
          // until then look with plain reads, so that a burst of waiting requests does not queue for the lock.
          do await nextWake(signal);
          while (now() - started < settlingWaitMs && (await currentState(request)) === outcome.state);
          continue;
        }
        if (outcome.kind !== 'learning') return outcome;
        await nextWake(signal);
      }
    },
    settle,
    async markWasted(ledgerId, reason) {
      try {
        await store.markWasted(ledgerId, reason);
      } catch (error) {
        logger.error('could not mark a ledger row as wasted', { ledgerId, reason, err: error });
      }
    },
    release,
    async status() {
      const account = await store.account();
      lastSeen = account;
      const reservations = await store.reservations(now());
      const figures = {
        balanceUsd: account.balanceUsd ?? undefined,
        balanceSeenAt: account.balanceSeenAt ?? undefined,
        floorUsd,
        warnUsd,
        pricePerCharUsd: priceOf(account),
        priceSource:
          account.pricePerCharUsd !== null
            ? ('learned' as const)
            : options.pricePerCharUsd === undefined
              ? ('assumed' as const)
              : ('configured' as const),
        memberCharsPerMinute,
        inFlight: reservations.length,
        reservedUsd: fromNanos(sumNanos(reservations)),
        uncertain: await store.uncertain(),
      };
      return account.blockedSince === null
        ? { ...figures, status: 'active' }
        : {
            ...figures,
            status: 'blocked',
            since: account.blockedSince,
            reason: account.blockedReason ?? 'floor-reached',
          };
    },
    estimateUsd(characters) {
      return fromNanos(estimateWith(lastSeen, characters));
    },
    spendToday: (guildId) => store.spendOn(guildId, utcDay(now())),
    guildSettings: (guildId) => store.guildSettings(guildId),
    setDailyCap: (guildId, usd) => store.setDailyCap(guildId, usd),
    setAlertChannel: (guildId, channelId) => store.setAlertChannel(guildId, channelId),
    async recheck(probe, by) {
      const opened = await open({ guildId: by.guildId, userId: by.userId, characters: 1 }, 'probe');
      if (opened.kind !== 'reserved') throw new Error('A probe reservation is never refused.');
      const reservation = opened.reservation;
      let result: Awaited<ReturnType<BudgetProbe>>;
      try {
        result = await probe();
      } catch (error) {
        await release(reservation, error);
        if (error instanceof TtsInsufficientBalanceError) {
          return { kind: 'still-blocked', balanceUsd: lastSeen.balanceUsd ?? undefined, floorUsd };
        }
        throw error;
      }
      await settle({ ...reservation, characters: result.characters }, result);
      const outcome = await store.locked(async (tx): Promise<RecheckOutcome> => {
        const account = await tx.account();
        lastSeen = account;
        const balance = account.balanceUsd;
        if (account.blockedSince === null)
          return { kind: 'active', balanceUsd: balance ?? undefined, floorUsd };
        const cheapest = toNanos(priceOf(account));
        if (result.balanceUsd === undefined || balance === null || toNanos(balance) - cheapest < floorNanos) {
          return { kind: 'still-blocked', balanceUsd: balance ?? undefined, floorUsd };
        }
        lastSeen = { ...account, blockedSince: null, blockedReason: null };
        await tx.saveAccount(lastSeen);
        return { kind: 'resumed', balanceUsd: balance, floorUsd };
      });
      if (outcome.kind === 'resumed') {
        alert(outcome);
        wake();
      }
      return outcome;
    },
  };
}
