/**
 * The budget's rules, apart from the state that applies them: what a request would cost, whether it may be
 * spoken (the floor, the server's daily cap, the member's rate limit), when a floor refusal is only for now (while
 * generations in flight settle), and when the floor and warning levels are crossed.
 */
import type { BudgetAlert } from './alerts.ts';
import type { BudgetGuardOptions, BudgetRequest, QueuedCharacters } from './guard-types.ts';
import { fromNanos, toNanos } from './money.ts';
import { ASSUMED_PRICE_PER_CHAR_USD } from './price.ts';
import type { BudgetReads, OpenTotals } from './reads.ts';
import { type AccountState, utcDay } from './records.ts';
import type { BudgetRefusal } from './refusal.ts';

/** One minute in ms: the window of the member rate limit. */
export const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** What the rules are set by: the guard's floor, warning level, configured price and member rate. */
export type BudgetRulesOptions = Pick<
  BudgetGuardOptions,
  'floorUsd' | 'warnUsd' | 'pricePerCharUsd' | 'memberCharsPerMinute'
>;

/**
 * The rules for one set of options. They keep no state: every figure they judge is passed in, read by the
 * guard in the transaction its decision is made in.
 */
export function createBudgetRules(options: BudgetRulesOptions) {
  const { floorUsd, warnUsd, memberCharsPerMinute } = options;
  const floorNanos = toNanos(floorUsd);

  const priceOf = (account: AccountState): number =>
    account.pricePerCharUsd ?? options.pricePerCharUsd ?? ASSUMED_PRICE_PER_CHAR_USD;
  const estimateWith = (account: AccountState, characters: number): number =>
    Math.round(priceOf(account) * characters * 1e9);
  // Before the first balance is seen, reservations have nothing to be checked against, so concurrency could
  // overshoot the floor: one generation at a time until a response reports it. With a floor of 0 the service's
  // own refusal (402) is the floor, and nothing needs to wait.
  const learning = (account: AccountState): boolean => account.balanceUsd === null && floorNanos > 0;

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
   * Whether a floor refusal stands only on reservations made before the known balance was seen. Their charges may
   * be in that balance already (the service charges as it answers; a burst's settlements trail its charges), so
   * counting them as well refuses what fits: such a request waits for them to settle rather than being refused.
   */
  const onlyInFlightStandsInTheWay = (refusal: BudgetRefusal, open: OpenTotals): boolean =>
    refusal.kind === 'would-cross-floor' &&
    open.priorNanos > 0 &&
    toNanos(refusal.balanceUsd) -
      (toNanos(refusal.reservedUsd) - open.priorNanos) -
      toNanos(refusal.estimateUsd) >=
      floorNanos;

  /** What a decision was made on, as far as settlements, releases and expiries can change it. */
  const stateOf = (account: AccountState, open: OpenTotals): string =>
    [account.balanceUsd, account.balanceSeenAt, account.blockedSince, open.count, open.estimateNanos].join(
      '|',
    );

  return { priceOf, estimateWith, learning, evaluate, withTransitions, onlyInFlightStandsInTheWay, stateOf };
}
