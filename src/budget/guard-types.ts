/**
 * The budget guard's interface: what it is asked (requests, settlements), what it answers (reservations,
 * outcomes, its status), and its options. `createBudgetGuard` in `guard.ts` implements it.
 */
import type { Logger } from '../log.ts';
import type { BudgetAlert } from './alerts.ts';
import type { PriceSource } from './price.ts';
import type { BlockReason, DailySpend, GuildBudgetSettings } from './records.ts';
import type { BudgetRefusal } from './refusal.ts';
import type { BudgetStore } from './store.ts';

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

/**
 * Outcome of {@link BudgetGuard.reserve}. `learning`: the balance is unknown and one generation is in flight.
 * `settling`: refused only on counting generations in flight whose charges the known balance may already include;
 * it fits if they were, so their settlements will tell (`refusal` is the answer if they do not).
 */
export type ReserveOutcome =
  | { readonly kind: 'reserved'; readonly reservation: Reservation }
  | BudgetRefusal
  | { readonly kind: 'learning' }
  | {
      readonly kind: 'settling';
      readonly refusal: BudgetRefusal;
      /** What the decision was made on (balance, in-flight totals): a change means it may be decided otherwise. */
      readonly state: string;
    };

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
  /**
   * How long {@link BudgetGuard.acquire} waits for generations in flight to settle when only they stand between a
   * request and the floor (default 10 s); the refusal stands after it.
   */
  readonly settlingWaitMs?: number;
  /**
   * A settlement or release the database did not take is retried after `first` ms (default 1 s), the delay
   * doubling to `max` (default 30 s), for as long as the reservation lives.
   */
  readonly retryDelaysMs?: { readonly first: number; readonly max: number };
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
   * {@link reserve}, waiting while the price or balance is being learned (one generation at a time until then),
   * and while only generations in flight, which the known balance may already include, stand in the way.
   * @throws TtsAbortedError when `signal` aborts while waiting.
   */
  acquire(
    request: BudgetRequest,
    signal?: AbortSignal,
  ): Promise<{ readonly kind: 'reserved'; readonly reservation: Reservation } | BudgetRefusal>;
  /**
   * Records what the generation cost (ledger row and account state, durably) and frees the reservation. Returns
   * the ledger row's id (for {@link markWasted}); undefined when the reservation was already settled, or when the
   * database did not take the write: then it is retried in the background while the reservation lives (holding
   * its estimate meanwhile), and `onRecorded` gets the row's id when it lands. Never rejects: the service has
   * charged, and what it sent is the member's whatever the database does.
   */
  settle(
    reservation: Reservation,
    settlement: Settlement,
    onRecorded?: (ledgerId: number) => void,
  ): Promise<number | undefined>;
  /** Records in the ledger that a settled generation's audio was never heard, and why; never rejects (logs). */
  markWasted(ledgerId: number, reason: string): Promise<void>;
  /**
   * Frees the reservation of a failed generation; a {@link TtsInsufficientBalanceError} blocks at once. Never
   * rejects: a write the database did not take is retried in the background, as a settlement's.
   */
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
