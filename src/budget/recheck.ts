import type { Logger } from '../log.ts';
import type { BudgetGuard, BudgetProbe } from './guard-types.ts';

/** Options of {@link startBudgetRechecks}. */
export interface BudgetRecheckOptions {
  readonly guard: BudgetGuard;
  readonly probe: BudgetProbe;
  /** How often a stop is re-checked; 0 turns the re-checks off. */
  readonly intervalMs: number;
  readonly logger: Logger;
}

/** Who a re-check Herald made by itself is recorded under in the ledger. */
export const AUTOMATIC_RECHECK = { guildId: 'herald', userId: 'herald' } as const;

/**
 * Re-checks a stop by itself, at start-up and every `intervalMs`: one cheapest possible paid call (its cost in the
 * ledger), and Herald resumes when the balance it reports is above the floor, so a top-up needs no operator
 * command. A stop at Herald's own floor (above 0) is left to the operator: the probe itself would spend below it.
 * Returns a function that stops the re-checks.
 */
export function startBudgetRechecks(options: BudgetRecheckOptions): () => void {
  const { guard, probe, intervalMs, logger } = options;
  if (intervalMs <= 0) return () => {};
  let running = false;
  const tick = async (): Promise<void> => {
    if (running) return;
    running = true;
    try {
      // Every process sharing the database re-checks on its own timer; the stop and its end are in the database,
      // so the first probe that sees a top-up resumes all of them.
      const status = await guard.status();
      if (status.status !== 'blocked') return;
      if (status.reason === 'floor-reached' && status.floorUsd > 0) return;
      const outcome = await guard.recheck(probe, AUTOMATIC_RECHECK);
      logger.info('budget re-checked', { outcome: outcome.kind, balanceUsd: outcome.balanceUsd });
    } catch (error) {
      logger.warn('budget re-check failed; trying again later', { err: error });
    } finally {
      running = false;
    }
  };
  void tick();
  const timer = setInterval(() => void tick(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
