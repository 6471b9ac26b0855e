import type { Logger } from '../log.ts';
import type { TtsClient } from '../tts/index.ts';
import { createBudgetAlerter } from './alerts.ts';
import type { BudgetConfig } from './config.ts';
import { createBudgetGuard } from './guard.ts';
import type { BudgetGuard, BudgetProbe } from './guard-types.ts';
import { startBudgetRechecks } from './recheck.ts';
import type { BudgetStore } from './store.ts';
import { createTtsProbe } from './synthesize.ts';

/** The budget as the rest of Herald uses it, from {@link createBudget}. */
export interface Budget {
  readonly guard: BudgetGuard;
  /** The paid call that learns the balance (`/budget recheck`, the automatic re-checks). */
  readonly probe: BudgetProbe;
  /** Starts re-checking a stop every `BUDGET_RECHECK_MINUTES`; returns the stop of the re-checks. */
  startRechecks(): () => void;
}

/** What {@link createBudget} is built from. */
export interface BudgetParts {
  readonly config: BudgetConfig;
  readonly store: BudgetStore;
  readonly tts: TtsClient;
  /**
   * Who this process is, the same after a restart (the host and its shards, not the pid): what a killed run left
   * reserved is reconciled at once. Two live processes must not share it.
   */
  readonly owner: string;
  /** Posts an alert in a channel (`BUDGET_ALERT_CHANNEL_ID`, or a server's own). */
  readonly post: (channelId: string, content: string) => Promise<void>;
  readonly logger: Logger;
}

/** Builds the budget guard (reconciling what a previous run of this process left reserved), its alerts and probe. */
export async function createBudget(parts: BudgetParts): Promise<Budget> {
  const { config, store, logger } = parts;
  const guard = await createBudgetGuard({
    store,
    floorUsd: config.floorUsd,
    warnUsd: config.warnUsd,
    pricePerCharUsd: config.pricePerCharUsd,
    memberCharsPerMinute: config.memberCharsPerMinute,
    owner: parts.owner,
    logger,
    onAlert: createBudgetAlerter({ store, alertChannelId: config.alertChannelId, logger, send: parts.post }),
  });
  const probe = createTtsProbe(parts.tts);
  return {
    guard,
    probe,
    startRechecks: () => startBudgetRechecks({ guard, probe, intervalMs: config.recheckIntervalMs, logger }),
  };
}
