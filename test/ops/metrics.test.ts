import { describe, expect, it } from 'vitest';
import type { BudgetStatus } from '../../src/budget/index.ts';
import { createOpsMetrics, type OpsState } from '../../src/ops/index.ts';

const active: BudgetStatus = {
  status: 'active',
  balanceUsd: 9.5,
  balanceSeenAt: 0,
  floorUsd: 1,
  warnUsd: 3,
  pricePerCharUsd: 0.0001,
  priceSource: 'learned',
  memberCharsPerMinute: 5000,
  inFlight: 2,
  reservedUsd: 0.25,
  uncertain: { generations: 0, upToUsd: 0 },
};

const state = (overrides: Partial<OpsState> = {}): OpsState => ({
  budget: async () => active,
  sessions: () => [
    { guildId: '1', guildName: 'A', channelName: 'a', queueDepth: 3, connection: 'ready', player: 'playing' },
  ],
  gatewayConnected: () => true,
  ledger: () => [],
  recentProblems: () => [],
  cache: () => ({ entries: 4, bytes: 4096 }),
  ...overrides,
});

/** The sample lines of one family in a scrape (none when it was left out). */
const samples = (text: string, name: string): string[] =>
  text
    .split('\n')
    .filter((line) => line === name || line.startsWith(`${name} `) || line.startsWith(`${name}{`));

describe('createOpsMetrics', () => {
  it("reads the budget's gauges from its state at scrape time", async () => {
    const text = await createOpsMetrics(state()).registry.metrics();
    expect(samples(text, 'herald_balance_usd')).toEqual(['herald_balance_usd 9.5']);
    expect(samples(text, 'herald_budget_floor_usd')).toEqual(['herald_budget_floor_usd 1']);
    expect(samples(text, 'herald_budget_warn_usd')).toEqual(['herald_budget_warn_usd 3']);
    expect(samples(text, 'herald_budget_reservations_held')).toEqual(['herald_budget_reservations_held 2']);
    expect(samples(text, 'herald_budget_stopped')).toEqual(['herald_budget_stopped 0']);
    expect(samples(text, 'herald_queue_depth')).toEqual(['herald_queue_depth 3']);
  });

  it('leaves out a figure nobody knows (no balance seen yet, no warning level set) rather than show 0', async () => {
    const unknown: BudgetStatus = {
      ...active,
      balanceUsd: undefined,
      balanceSeenAt: undefined,
      warnUsd: undefined,
    };
    const text = await createOpsMetrics(state({ budget: async () => unknown })).registry.metrics();
    expect(text).toContain('# TYPE herald_balance_usd gauge');
    expect(samples(text, 'herald_balance_usd')).toEqual([]);
    expect(samples(text, 'herald_budget_warn_usd')).toEqual([]);
    expect(samples(text, 'herald_budget_floor_usd')).toEqual(['herald_budget_floor_usd 1']);
  });
});
