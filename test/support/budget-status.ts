import type { BudgetStatus } from '../../src/budget/index.ts';

/** An active budget as `/budget` and the operations endpoint read it: $9.50 left above a $1 floor, nothing held. */
export const activeBudget = (
  overrides: Partial<Extract<BudgetStatus, { status: 'active' }>> = {},
): BudgetStatus => ({
  status: 'active',
  balanceUsd: 9.5,
  balanceSeenAt: 0,
  floorUsd: 1,
  warnUsd: 3,
  pricePerCharUsd: 0.0001,
  priceSource: 'learned',
  memberCharsPerMinute: 5000,
  inFlight: 0,
  reservedUsd: 0,
  uncertain: { generations: 0, upToUsd: 0 },
  ...overrides,
});
