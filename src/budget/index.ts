// The budget guard: configuration, storage, the guard itself, the guarded synthesis and alerts. Import from here.
import type { BudgetGuard, BudgetProbe } from './guard-types.ts';

export { type BudgetAlert, type BudgetAlerterOptions, createBudgetAlerter, describeAlert } from './alerts.ts';
export {
  type BudgetConfig,
  type BudgetConfigResult,
  DEFAULT_MEMBER_CHARS_PER_MINUTE,
  parseBudgetConfig,
} from './config.ts';
export { type Budget, type BudgetParts, createBudget } from './create.ts';
export { createBudgetGuard } from './guard.ts';
export type {
  BudgetGuard,
  BudgetGuardOptions,
  BudgetProbe,
  BudgetRequest,
  BudgetStatus,
  QueuedCharacters,
  RecheckOutcome,
  Reservation,
  ReserveOutcome,
  Settlement,
} from './guard-types.ts';
export { BUDGET_MIGRATIONS } from './migrations.ts';
export { formatUsd } from './money.ts';
export { ASSUMED_PRICE_PER_CHAR_USD, learnPrice, type PriceSource } from './price.ts';
export type { BudgetReads } from './reads.ts';
export { AUTOMATIC_RECHECK, type BudgetRecheckOptions, startBudgetRechecks } from './recheck.ts';
export {
  type AccountState,
  type BlockReason,
  type DailySpend,
  type GuildBudgetSettings,
  type LedgerEntry,
  type LedgerInput,
  type MemberSpend,
  type StoredReservation,
  utcDay,
  type WasteReason,
} from './records.ts';
export { type BudgetRefusal, BudgetRefusedError, describeRefusal } from './refusal.ts';
export { type BudgetStore, type BudgetTransaction, createBudgetStore } from './store.ts';
export {
  type BudgetedSynthesis,
  budgetedSynthesize,
  createTtsProbe,
  type GuildSynthesize,
  PROBE_TEXT,
} from './synthesize.ts';

/** What `/budget` needs; the composition root merges it into `Deps`. */
export interface BudgetDeps {
  readonly budget: BudgetGuard;
  /** The paid call `/budget recheck` makes. */
  readonly budgetProbe: BudgetProbe;
  /** Whether a user may run `/budget recheck`: `BOT_OWNER_IDS`, or else the application's owner or team. */
  readonly isOperator: (userId: string) => Promise<boolean>;
  /** `BUDGET_ALERT_CHANNEL_ID`, shown by `/budget show` as where alerts go. */
  readonly budgetAlertChannelId: string | undefined;
}
