import { AggregatorRegistry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BudgetStatus } from '../../src/budget/index.ts';
import { createOpsMetrics, type OpsState } from '../../src/ops/index.ts';
import { activeBudget } from '../support/budget-status.ts';

const active = activeBudget({ inFlight: 2, reservedUsd: 0.25 });

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

/** The budget's gauges: read from the database, left out when it cannot be read. */
const BUDGET_GAUGES = [
  'herald_balance_usd',
  'herald_budget_floor_usd',
  'herald_budget_warn_usd',
  'herald_budget_reservations_held',
  'herald_budget_reserved_usd',
  'herald_budget_stopped',
];

afterEach(() => {
  vi.useRealTimers();
});

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

  it('answers a scrape while the database is down: the budget gauges left out, and a gauge saying so', async () => {
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    const text = await createOpsMetrics(state({ budget: () => Promise.reject(refused) })).registry.metrics();
    expect(samples(text, 'herald_budget_state_readable')).toEqual(['herald_budget_state_readable 0']);
    for (const name of BUDGET_GAUGES) expect(samples(text, name), name).toEqual([]);
    // What needs no database is all there.
    expect(samples(text, 'herald_voice_sessions')).toEqual(['herald_voice_sessions 1']);
    expect(samples(text, 'herald_gateway_connected')).toEqual(['herald_gateway_connected 1']);
    expect(samples(text, 'herald_audio_cache_entries')).toEqual(['herald_audio_cache_entries 4']);
    expect(samples(text, 'herald_budget_stops_total')).toHaveLength(3);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
  });

  it('reads it again at the next scrape: readable, and every budget gauge back', async () => {
    let down = true;
    const { registry } = createOpsMetrics(
      state({ budget: async () => (down ? Promise.reject(new Error('down')) : active) }),
    );
    expect(samples(await registry.metrics(), 'herald_budget_state_readable')).toEqual([
      'herald_budget_state_readable 0',
    ]);
    down = false;
    const text = await registry.metrics();
    expect(samples(text, 'herald_budget_state_readable')).toEqual(['herald_budget_state_readable 1']);
    for (const name of BUDGET_GAUGES) expect(samples(text, name), name).toHaveLength(1);
  });

  it("reads the budget's state once per scrape, however many gauges show it", async () => {
    let reads = 0;
    const { registry } = createOpsMetrics(
      state({
        budget: async () => {
          reads += 1;
          return active;
        },
      }),
    );
    await registry.metrics();
    expect(reads).toBe(1);
    await registry.getMetricsAsJSON();
    expect(reads).toBe(2);
  });

  it('leaves the budget gauges out when the database does not answer within the bound', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { registry } = createOpsMetrics(state({ budget: () => new Promise<never>(() => {}) }), {
      databaseTimeoutMs: 2_000,
    });
    let text: string | undefined;
    const scrape = registry.metrics().then((answer) => {
      text = answer;
    });
    await vi.advanceTimersByTimeAsync(1_999);
    expect(text).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    // Every microtask behind the deadline has run by the next turn of the event loop (setImmediate is not faked).
    await new Promise((resolve) => setImmediate(resolve));
    expect(text).toBeDefined();
    await scrape;
    expect(samples(text ?? '', 'herald_budget_state_readable')).toEqual(['herald_budget_state_readable 0']);
    expect(samples(text ?? '', 'herald_balance_usd')).toEqual([]);
    expect(samples(text ?? '', 'herald_voice_sessions')).toEqual(['herald_voice_sessions 1']);
  });

  it("sums into the sharding manager's scrape: a shard that cannot read the budget still counts", async () => {
    const reading = createOpsMetrics(state()).registry;
    const down = createOpsMetrics(state({ budget: () => Promise.reject(new Error('down')) })).registry;
    // What each shard sends the manager over IPC; a rejected collect would lose the whole shard.
    const text = await AggregatorRegistry.aggregate([
      await down.getMetricsAsJSON(),
      await reading.getMetricsAsJSON(),
    ]).metrics();
    expect(samples(text, 'herald_budget_state_readable')).toEqual(['herald_budget_state_readable 0']);
    expect(samples(text, 'herald_voice_sessions')).toEqual(['herald_voice_sessions 2']);
    expect(samples(text, 'herald_budget_floor_usd')).toEqual(['herald_budget_floor_usd 1']);
  });
});
