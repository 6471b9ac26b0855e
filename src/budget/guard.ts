import { UserFacingError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { mayHaveCharged, TtsAbortedError, TtsInsufficientBalanceError } from '../tts/index.ts';
import type { BudgetReads, OpenTotals } from './reads.ts';
import {
  type AccountState,
  type BlockReason,
  type DailySpend,
  type GuildBudgetSettings,
  type StoredReservation,
  utcDay,
} from './records.ts';
import type { BudgetStore, BudgetTransaction } from './store.ts';

/** What a generation is for: who asked, where, and how many characters the service will bill. */
export interface BudgetRequest {
  readonly guildId: string;
  readonly userId: string;
  /** Unicode code points of the text sent, as the service counts them. */
  readonly characters: number;
}

/** Money set aside for one generation in flight; settle or release it exactly once. */
export interface Reservation {
  readonly id: number;
  /** `probe` is the operator's `/budget recheck`; it bypasses the checks and its balance is always trusted. */
  readonly kind: 'speech' | 'probe';
  readonly guildId: string;
  readonly userId: string;
  readonly characters: number;
  /** USD set aside, at the learned, configured or assumed price. */
  readonly estimateUsd: number;
}

/** Why a request may not be spoken; each kind carries what its sentence needs (see {@link describeRefusal}). */
export type BudgetRefusal =
  | {
      readonly kind: 'blocked';
      readonly reason: BlockReason;
      readonly since: number;
      /** The last known balance; undefined when the service never reported one. */
      readonly balanceUsd: number | undefined;
      readonly floorUsd: number;
    }
  | {
      readonly kind: 'would-cross-floor';
      readonly balanceUsd: number;
      /** Already set aside for generations in flight. */
      readonly reservedUsd: number;
      readonly estimateUsd: number;
      readonly floorUsd: number;
    }
  | {
      readonly kind: 'daily-cap';
      readonly guildId: string;
      /** Spent today plus in flight for this server. */
      readonly spentUsd: number;
      readonly estimateUsd: number;
      readonly capUsd: number;
      /** Next UTC midnight, ms since the epoch. */
      readonly resetsAt: number;
    }
  | {
      readonly kind: 'member-rate';
      readonly userId: string;
      /** Characters in the last minute, in flight included. */
      readonly usedCharacters: number;
      readonly characters: number;
      readonly limitPerMinute: number;
      /** How long until this request would fit; undefined when it never can (longer than the limit). */
      readonly retryAfterMs: number | undefined;
    };

/** Outcome of {@link BudgetGuard.reserve}. `learning`: the balance is unknown and one generation is in flight. */
export type ReserveOutcome =
  | { readonly kind: 'reserved'; readonly reservation: Reservation }
  | BudgetRefusal
  | { readonly kind: 'learning' };

/** What the response of a generation said about money. */
export interface Settlement {
  readonly costUsd: number | undefined;
  readonly balanceUsd: number | undefined;
  readonly requestId: string | undefined;
}

/** The cheapest paid call, made by `/budget recheck` to read the balance; see `createTtsProbe`. */
export type BudgetProbe = () => Promise<Settlement & { readonly characters: number }>;

/** Outcome of {@link BudgetGuard.recheck}. */
export type RecheckOutcome =
  | { readonly kind: 'resumed'; readonly balanceUsd: number; readonly floorUsd: number }
  | { readonly kind: 'still-blocked'; readonly balanceUsd: number | undefined; readonly floorUsd: number }
  | { readonly kind: 'active'; readonly balanceUsd: number | undefined; readonly floorUsd: number };

/** Something the operator should hear about; see `describeAlert`. */
export type BudgetAlert =
  | {
      readonly kind: 'warn';
      readonly balanceUsd: number;
      readonly warnUsd: number;
      readonly floorUsd: number;
    }
  | {
      readonly kind: 'blocked';
      readonly reason: BlockReason;
      readonly balanceUsd: number | undefined;
      readonly floorUsd: number;
    }
  | { readonly kind: 'resumed'; readonly balanceUsd: number; readonly floorUsd: number };

/**
 * Where the price per character comes from: the service's own figures, the configuration, or, before either, a
 * deliberately high assumption ({@link ASSUMED_PRICE_PER_CHAR_USD}) so that estimates err on the side of the floor.
 */
export type PriceSource = 'learned' | 'configured' | 'assumed';

/**
 * The price assumed before the service's figures or the configuration give one: $0.30 per thousand characters,
 * the top of what commercial TTS services charge, so an estimate made with it is never too low.
 */
export const ASSUMED_PRICE_PER_CHAR_USD = 0.0003;

/** The guard's figures, for `/budget show` and tests. */
export type BudgetStatus = {
  readonly balanceUsd: number | undefined;
  readonly balanceSeenAt: number | undefined;
  readonly floorUsd: number;
  readonly warnUsd: number | undefined;
  readonly pricePerCharUsd: number;
  readonly priceSource: PriceSource;
  readonly memberCharsPerMinute: number;
  /** Generations in flight and the money set aside for them. */
  readonly inFlight: number;
  readonly reservedUsd: number;
  /** Generations a stopped process left unsettled (uncertain ledger rows), and the most they could have cost. */
  readonly uncertain: { readonly generations: number; readonly upToUsd: number };
} & (
  | { readonly status: 'active' }
  | { readonly status: 'blocked'; readonly since: number; readonly reason: BlockReason }
);

/** Options of {@link createBudgetGuard}. */
export interface BudgetGuardOptions {
  readonly store: BudgetStore;
  /** `BUDGET_FLOOR_USD`: no request may take the balance below it. */
  readonly floorUsd: number;
  /** `BUDGET_WARN_USD`: alert once each time the balance falls to it; above the floor. */
  readonly warnUsd?: number | undefined;
  /** `BUDGET_PRICE_PER_CHAR_USD`: the price used until the service's figures teach the real one. */
  readonly pricePerCharUsd?: number | undefined;
  /** `BUDGET_MEMBER_CHARS_PER_MINUTE`: characters one user may have spoken in any 60 s, all servers together. */
  readonly memberCharsPerMinute: number;
  /** Clock in ms since the epoch; `Date.now` by default. */
  readonly now?: () => number;
  /**
   * How long a reservation holds money before it is taken to belong to a process that died (default 5 min, well
   * beyond the TTS client's connect and first-byte timeouts with their retries). It is then released; a late
   * settlement is still recorded, once.
   */
  readonly reservationTtlMs?: number;
  /**
   * Who this process is, the same across its restarts (e.g. the host and its shards): what a previous run of
   * it left reserved is reconciled as soon as it starts, not only when it expires. Unset: only on expiry.
   */
  readonly owner?: string | undefined;
  /**
   * While learning the balance (one generation at a time), how often a waiting request looks again for another
   * process's settlement (default 250 ms); settlements in this process wake it at once.
   */
  readonly learningPollMs?: number;
  readonly logger: Logger;
  /** Told of warnings, blocks and resumptions; must not throw (it is called synchronously). */
  readonly onAlert?: (alert: BudgetAlert) => void;
}

/** Refuses, reserves and settles the money of every generation, so spending stops at the floor and never past it. */
export interface BudgetGuard {
  /**
   * Would this request be allowed now, on top of what is already queued and not yet reserved? Reserves nothing:
   * for refusing a `/speak` at once rather than after it waited in the queue.
   */
  check(request: BudgetRequest, queued?: QueuedCharacters): Promise<{ readonly kind: 'ok' } | BudgetRefusal>;
  /**
   * Checks and reserves in one database transaction holding the budget's lock, so concurrent callers, in this
   * process or any other sharing the database, see each other's reservations.
   */
  reserve(request: BudgetRequest): Promise<ReserveOutcome>;
  /**
   * {@link reserve}, waiting while the price or balance is being learned (one generation at a time until then).
   * @throws TtsAbortedError when `signal` aborts while waiting.
   */
  acquire(
    request: BudgetRequest,
    signal?: AbortSignal,
  ): Promise<{ readonly kind: 'reserved'; readonly reservation: Reservation } | BudgetRefusal>;
  /**
   * Records what the generation cost (ledger row and account state, durably) and frees the reservation. Returns
   * the ledger row's id (for {@link markWasted}); undefined when the reservation was already settled.
   */
  settle(reservation: Reservation, settlement: Settlement): Promise<number | undefined>;
  /** Records in the ledger that a settled generation's audio was never heard, and why; never rejects (logs). */
  markWasted(ledgerId: number, reason: string): Promise<void>;
  /** Frees the reservation of a failed generation; a {@link TtsInsufficientBalanceError} blocks at once. */
  release(reservation: Reservation, error: unknown): Promise<void>;
  /** The account as the database has it now, with every process's reservations. */
  status(): Promise<BudgetStatus>;
  /**
   * What `characters` would cost at the current (learned, configured or assumed) price, as this process last read
   * it from the database (at most one decision old).
   */
  estimateUsd(characters: number): number;
  /** The server's spend on the current UTC day, per member. */
  spendToday(guildId: string): Promise<DailySpend>;
  guildSettings(guildId: string): Promise<GuildBudgetSettings>;
  /** Sets (or with null clears) the server's daily cap. */
  setDailyCap(guildId: string, usd: number | null): Promise<void>;
  /** Sets (or with null clears) where this server's budget alerts go. */
  setAlertChannel(guildId: string, channelId: string | null): Promise<void>;
  /**
   * Makes the probe's paid call, whatever the state, and trusts the balance it reports; resumes when that is above
   * the floor. The probe is recorded in the ledger under `by`.
   * @throws what the probe throws, except a {@link TtsInsufficientBalanceError} (that is `still-blocked`).
   */
  recheck(
    probe: BudgetProbe,
    by: { readonly guildId: string; readonly userId: string },
  ): Promise<RecheckOutcome>;
}

/** Characters queued in voice sessions and not yet reserved, which {@link BudgetGuard.check} counts as committed. */
export interface QueuedCharacters {
  /** The member's, in every server (the rate limit is per member). */
  readonly member: number;
  /** Everyone's in this server (its daily cap). */
  readonly guild: number;
  /** Everyone's everywhere (the floor). */
  readonly all: number;
}

/** A refusal as an error, for the voice session's failure path; `describeFailure` shows its message. */
export class BudgetRefusedError extends UserFacingError {
  /** The refusal this error carries. */
  readonly refusal: BudgetRefusal;

  constructor(refusal: BudgetRefusal) {
    super(describeRefusal(refusal));
    this.refusal = refusal;
  }
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

// Money is compared in whole nano-dollars: 0.5003 − 0.0003 in floating point is 0.49999999999999994, which
// would refuse a request that lands exactly on the floor.
const toNanos = (usd: number): number => Math.round(usd * 1e9);
const fromNanos = (nanos: number): number => nanos / 1e9;

/** Half the service's apparent rounding unit of a cost (it reports whole micro-dollars). */
const COST_ROUNDING_USD = 0.5e-6;

/**
 * The price per character after a generation of `characters` cost `costUsd`. The service rounds each cost, so a
 * longer text pins the price more precisely: the known price is kept while the new figure agrees with it within
 * rounding and comes from fewer characters; a figure that disagrees means the price changed, and replaces it.
 */
export function learnPrice(state: AccountState, costUsd: number, characters: number): AccountState {
  const observed = costUsd / characters;
  const known = state.pricePerCharUsd;
  const knownCharacters = state.priceCharacters ?? 1;
  const tolerance = COST_ROUNDING_USD / characters + COST_ROUNDING_USD / knownCharacters;
  if (known !== null && characters < knownCharacters && Math.abs(observed - known) <= tolerance) return state;
  return { ...state, pricePerCharUsd: observed, priceCharacters: characters };
}

const DEFAULT_RESERVATION_TTL_MS = 5 * MINUTE_MS;
const DEFAULT_LEARNING_POLL_MS = 250;

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
  const floorNanos = toNanos(floorUsd);
  let waiters: (() => void)[] = [];
  // The last account state this process read: only for estimates outside a decision (`estimateUsd`).
  let lastSeen: AccountState = await store.account();

  const priceOf = (account: AccountState): number =>
    account.pricePerCharUsd ?? options.pricePerCharUsd ?? ASSUMED_PRICE_PER_CHAR_USD;
  const estimateWith = (account: AccountState, characters: number): number =>
    Math.round(priceOf(account) * characters * 1e9);
  const sumNanos = (reservations: readonly StoredReservation[]) =>
    reservations.reduce((sum, r) => sum + r.estimateNanos, 0);
  // Before the first balance is seen, reservations have nothing to be checked against, so concurrency could
  // overshoot the floor: one generation at a time until a response reports it. With a floor of 0 the service's
  // own refusal (402) is the floor, and nothing needs to wait.
  const learning = (account: AccountState): boolean => account.balanceUsd === null && floorNanos > 0;

  const alert = (event: BudgetAlert): void => {
    if (event.kind === 'resumed') logger.info('budget resumed', { ...event });
    else logger.warn(`budget ${event.kind}`, { ...event });
    try {
      options.onAlert?.(event);
    } catch (error) {
      logger.error('budget alert handler failed', { err: error });
    }
  };

  const wake = (): void => {
    const woken = waiters;
    waiters = [];
    for (const resume of woken) resume();
  };

  /** The refusal for `request`, on figures read in the same transaction (or a plain read, for `check`). */
  const evaluate = async (
    reader: BudgetReads,
    account: AccountState,
    open: OpenTotals,
    request: BudgetRequest,
    at: number,
    queued?: QueuedCharacters,
  ): Promise<BudgetRefusal | undefined> => {
    if (account.blockedSince !== null) {
      return {
        kind: 'blocked',
        reason: account.blockedReason ?? 'floor-reached',
        since: account.blockedSince,
        balanceUsd: account.balanceUsd ?? undefined,
        floorUsd,
      };
    }
    const estimate = estimateWith(account, request.characters);
    if (account.balanceUsd !== null) {
      const reserved = open.estimateNanos + estimateWith(account, queued?.all ?? 0);
      if (toNanos(account.balanceUsd) - reserved - estimate < floorNanos) {
        return {
          kind: 'would-cross-floor',
          balanceUsd: account.balanceUsd,
          reservedUsd: fromNanos(reserved),
          estimateUsd: fromNanos(estimate),
          floorUsd,
        };
      }
    }
    const { dailyCapUsd } = await reader.guildSettings(request.guildId);
    if (dailyCapUsd !== null) {
      const spent =
        toNanos((await reader.spendOn(request.guildId, utcDay(at))).usd) +
        open.guildEstimateNanos +
        estimateWith(account, queued?.guild ?? 0);
      if (spent + estimate > toNanos(dailyCapUsd)) {
        return {
          kind: 'daily-cap',
          guildId: request.guildId,
          spentUsd: fromNanos(spent),
          estimateUsd: fromNanos(estimate),
          capUsd: dailyCapUsd,
          resetsAt: (Math.floor(at / DAY_MS) + 1) * DAY_MS,
        };
      }
    }
    const recent = await reader.userCharactersSince(request.userId, at - MINUTE_MS);
    const inFlight = open.userCharacters;
    const used = recent.reduce((sum, row) => sum + row.characters, 0) + inFlight + (queued?.member ?? 0);
    if (used + request.characters > memberCharsPerMinute) {
      return {
        kind: 'member-rate',
        userId: request.userId,
        usedCharacters: used,
        characters: request.characters,
        limitPerMinute: memberCharsPerMinute,
        retryAfterMs: retryAfter(recent, open.count, used + request.characters - memberCharsPerMinute, at),
      };
    }
    return undefined;
  };

  /** When enough of the window's oldest rows have aged out to free `excess` characters. */
  const retryAfter = (
    recent: readonly { at: number; characters: number }[],
    inFlight: number,
    excess: number,
    at: number,
  ): number | undefined => {
    // Characters beyond the limit by themselves can never fit, however long the member waits.
    if (excess > 0 && recent.length === 0 && inFlight === 0) return undefined;
    let freed = 0;
    for (const row of recent) {
      freed += row.characters;
      if (freed >= excess) return Math.max(0, row.at + MINUTE_MS - at);
    }
    // What is still in flight will be in the ledger for another full minute once it settles.
    return MINUTE_MS;
  };

  const toReservation = (stored: StoredReservation): Reservation => ({
    id: stored.id,
    kind: stored.kind,
    guildId: stored.guildId,
    userId: stored.userId,
    characters: stored.characters,
    estimateUsd: fromNanos(stored.estimateNanos),
  });

  /** Applies the floor and warning rules to a state whose balance may have changed. */
  const withTransitions = (
    state: AccountState,
    at: number,
  ): { state: AccountState; alerts: BudgetAlert[] } => {
    const alerts: BudgetAlert[] = [];
    if (state.balanceUsd === null) return { state, alerts };
    const balance = state.balanceUsd;
    let next = state;
    // Blocked when even a one-character request would cross the floor.
    const cheapest = toNanos(priceOf(next));
    if (next.blockedSince === null && toNanos(balance) - cheapest < floorNanos) {
      next = { ...next, blockedSince: at, blockedReason: 'floor-reached' };
      alerts.push({ kind: 'blocked', reason: 'floor-reached', balanceUsd: balance, floorUsd });
    }
    if (warnUsd !== undefined) {
      if (!next.warned && toNanos(balance) <= toNanos(warnUsd)) {
        next = { ...next, warned: true };
        // A block says more than a warning; one message is enough.
        if (alerts.length === 0) alerts.push({ kind: 'warn', balanceUsd: balance, warnUsd, floorUsd });
      } else if (next.warned && toNanos(balance) > toNanos(warnUsd)) {
        next = { ...next, warned: false };
      }
    }
    return { state: next, alerts };
  };

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

  const settle = async (reservation: Reservation, settlement: Settlement): Promise<number | undefined> => {
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

  const release = async (reservation: Reservation, error: unknown): Promise<void> => {
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
        const open = await tx.openTotals(at, request.guildId, request.userId);
        const refusal = await evaluate(tx, account, open, request, at);
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
      const open = await store.openTotals(at, request.guildId, request.userId);
      const refusal = await evaluate(store, account, open, request, at, queued);
      return refusal ?? { kind: 'ok' };
    },
    reserve,
    async acquire(request, signal) {
      for (;;) {
        if (signal?.aborted) throw new TtsAbortedError();
        const outcome = await reserve(request);
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

/** The sentence a member sees for a refusal. */
export function describeRefusal(refusal: BudgetRefusal): string {
  switch (refusal.kind) {
    case 'blocked': {
      const balance = refusal.balanceUsd === undefined ? 'unknown' : formatUsd(refusal.balanceUsd);
      if (refusal.reason === 'balance-unknown') {
        return `Herald has stopped speaking: the speech service does not report the account balance, so the floor the operator set (${formatUsd(refusal.floorUsd)}) cannot be checked. Herald checks again by itself; the operator can also run /budget recheck.`;
      }
      return refusal.reason === 'floor-reached'
        ? `Herald has stopped speaking: the account balance (${balance}) has reached the floor the operator set (${formatUsd(refusal.floorUsd)}).`
        : `Herald has stopped speaking: the speech service refused a request for lack of credit (balance ${balance}; the floor the operator set is ${formatUsd(refusal.floorUsd)}). Herald resumes by itself once the operator tops up (it checks again every few minutes).`;
    }
    case 'would-cross-floor': {
      const committed =
        refusal.reservedUsd > 0 ? `, with ${formatUsd(refusal.reservedUsd)} already committed,` : '';
      return `Herald can’t say this: it would cost about ${formatUsd(refusal.estimateUsd)} and take the account balance (${formatUsd(refusal.balanceUsd)}${committed}) below the floor the operator set (${formatUsd(refusal.floorUsd)}). A shorter message may still fit.`;
    }
    case 'daily-cap':
      return `This server has used its daily speech budget: ${formatUsd(refusal.spentUsd)} of ${formatUsd(refusal.capUsd)} spent today (UTC), and this would cost about ${formatUsd(refusal.estimateUsd)}. It resets <t:${Math.floor(refusal.resetsAt / 1000)}:R>.`;
    case 'member-rate': {
      const limit = `${refusal.limitPerMinute.toLocaleString('en')} characters a minute`;
      if (refusal.retryAfterMs === undefined) {
        return `That message is ${refusal.characters.toLocaleString('en')} characters, more than the ${limit} one member may use. Send a shorter one.`;
      }
      return `You are speaking faster than the ${limit} one member may use (${refusal.usedCharacters.toLocaleString('en')} in the last minute). Try again in ${Math.max(1, Math.ceil(refusal.retryAfterMs / 1000))} s.`;
    }
  }
}

/** Dollars for people: cents always shown, more digits only when they matter (`$0.52`, `$0.0003`). */
export function formatUsd(usd: number): string {
  const sign = usd < 0 ? '-' : '';
  const fixed = Math.abs(usd)
    .toFixed(6)
    .replace(/0{1,4}$/, '');
  return `${sign}$${fixed}`;
}
