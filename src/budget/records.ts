/**
 * What the budget store keeps and returns: the account, ledger rows, reservations, daily spend and server
 * settings.
 */

/**
 * Why spending stopped: Herald's own floor check, the service refusing for lack of credit (402), or a floor that
 * cannot be checked because the service reports no balance.
 */
export type BlockReason = 'floor-reached' | 'service-refused' | 'balance-unknown';

/** Why paid audio was never heard: a member's `/skip` or `/stop`, a deleted message, or how the session ended. */
export type WasteReason = string;

/** The account as last seen, persisted so a restart resumes exactly where it stopped. */
export interface AccountState {
  /** The last trusted `X-Balance-USD`; null before any response. */
  readonly balanceUsd: number | null;
  /** When that balance was seen (ms since the epoch). */
  readonly balanceSeenAt: number | null;
  /** Learned price per character (cost ÷ characters); null before any generation reported a cost. */
  readonly pricePerCharUsd: number | null;
  /** The characters of the generation that price was learned from: more characters, less rounding error. */
  readonly priceCharacters: number | null;
  /** When spending stopped; null while Herald may speak. */
  readonly blockedSince: number | null;
  readonly blockedReason: BlockReason | null;
  /** True once the balance fell to the warning level, until it rises above it again. */
  readonly warned: boolean;
}

/** What one generation (or recheck probe) cost, as written to the ledger. */
export interface LedgerInput {
  /** `speech` for a member's utterance, `probe` for the operator's `/budget recheck`. */
  readonly kind: 'speech' | 'probe';
  readonly guildId: string;
  readonly userId: string;
  readonly characters: number;
  /** `X-Cost-USD`; null when the service did not send it. */
  readonly costUsd: number | null;
  /** What the guard reserved; spend falls back to it when the cost is unknown. */
  readonly estimatedCostUsd: number | null;
  /** `X-Balance-USD` of this response, as reported (even when not trusted as the account's balance). */
  readonly balanceAfterUsd: number | null;
  readonly requestId: string | null;
  /** Ms since the epoch. */
  readonly at: number;
}

/** One ledger row. */
export interface LedgerEntry extends LedgerInput {
  readonly id: number;
  /** Why this paid audio was never heard; null when it was played (or may still be). */
  readonly wasted: WasteReason | null;
  /**
   * True for a generation whose process stopped between the paid call and its settlement: the service may or
   * may not have charged it; it counts at its estimate (the most it could cost) until its settlement arrives.
   */
  readonly uncertain: boolean;
  /** The UTC day of `at`, `YYYY-MM-DD`. */
  readonly day: string;
}

/** One member's share of a server's spend on one day. */
export interface MemberSpend {
  readonly userId: string;
  readonly usd: number;
  readonly characters: number;
  readonly generations: number;
}

/** A server's spend on one UTC day, with per-member lines (largest first). */
export interface DailySpend {
  readonly guildId: string;
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly usd: number;
  readonly characters: number;
  readonly generations: number;
  readonly members: readonly MemberSpend[];
}

/** A server's budget settings; servers never configured have no cap and no alert channel. */
export interface GuildBudgetSettings {
  readonly guildId: string;
  /** Most this server may spend per UTC day; null for no cap. */
  readonly dailyCapUsd: number | null;
  /** Where budget warnings go for this server; null for none. */
  readonly alertChannelId: string | null;
}

/** Money set aside in the database for one generation in flight, until it is settled, released or expires. */
export interface StoredReservation {
  readonly id: number;
  readonly kind: 'speech' | 'probe';
  readonly guildId: string;
  readonly userId: string;
  readonly characters: number;
  readonly estimateNanos: number;
  /** True once another generation was in flight alongside this one: its reported balance may be stale. */
  readonly overlapped: boolean;
  /** The process that made it (see {@link BudgetTransaction.reconcile}); null for rows older than owners. */
  readonly owner: string | null;
  readonly createdAt: number;
  /** After this (ms), the reservation no longer holds money: its process is taken to have died. */
  readonly expiresAt: number;
}

/** The UTC day of a time in ms, as `YYYY-MM-DD`. */
export function utcDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}
