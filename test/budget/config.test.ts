import { describe, expect, it } from 'vitest';
import { DEFAULT_MEMBER_CHARS_PER_MINUTE, parseBudgetConfig } from '../../src/budget/index.ts';

describe('parseBudgetConfig', () => {
  it('has defaults for everything', () => {
    expect(parseBudgetConfig({})).toEqual({
      ok: true,
      value: {
        floorUsd: 0,
        warnUsd: undefined,
        alertChannelId: undefined,
        pricePerCharUsd: undefined,
        memberCharsPerMinute: DEFAULT_MEMBER_CHARS_PER_MINUTE,
        ownerIds: [],
        recheckIntervalMs: 300_000,
      },
    });
  });

  it('reads every variable', () => {
    expect(
      parseBudgetConfig({
        BUDGET_FLOOR_USD: '0.50',
        BUDGET_WARN_USD: ' 2 ',
        BUDGET_ALERT_CHANNEL_ID: '123456789012345678',
        BUDGET_PRICE_PER_CHAR_USD: '0.0001',
        BUDGET_MEMBER_CHARS_PER_MINUTE: '1200',
        BUDGET_RECHECK_MINUTES: '10',
        BOT_OWNER_IDS: '123456789012345678, 223456789012345678 323456789012345678',
      }),
    ).toEqual({
      ok: true,
      value: {
        floorUsd: 0.5,
        warnUsd: 2,
        alertChannelId: '123456789012345678',
        pricePerCharUsd: 0.0001,
        memberCharsPerMinute: 1200,
        ownerIds: ['123456789012345678', '223456789012345678', '323456789012345678'],
        recheckIntervalMs: 600_000,
      },
    });
  });

  it.each([
    [{ BUDGET_FLOOR_USD: '-1' }, 'BUDGET_FLOOR_USD'],
    [{ BUDGET_RECHECK_MINUTES: '0.01' }, 'BUDGET_RECHECK_MINUTES'],
    [{ BUDGET_RECHECK_MINUTES: 'soon' }, 'BUDGET_RECHECK_MINUTES'],
    [{ BUDGET_FLOOR_USD: 'lots' }, 'BUDGET_FLOOR_USD'],
    [{ BUDGET_FLOOR_USD: '1', BUDGET_WARN_USD: '0.5' }, 'BUDGET_WARN_USD must be above'],
    [{ BUDGET_FLOOR_USD: '1', BUDGET_WARN_USD: '1' }, 'BUDGET_WARN_USD must be above'],
    [{ BUDGET_ALERT_CHANNEL_ID: '#general' }, 'BUDGET_ALERT_CHANNEL_ID'],
    [{ BUDGET_PRICE_PER_CHAR_USD: '0' }, 'BUDGET_PRICE_PER_CHAR_USD'],
    [{ BUDGET_MEMBER_CHARS_PER_MINUTE: '0' }, 'BUDGET_MEMBER_CHARS_PER_MINUTE'],
    [{ BUDGET_MEMBER_CHARS_PER_MINUTE: '12.5' }, 'BUDGET_MEMBER_CHARS_PER_MINUTE'],
    [{ BOT_OWNER_IDS: 'alice' }, 'BOT_OWNER_IDS'],
  ])('%o is refused, naming %s', (env, named) => {
    const result = parseBudgetConfig(env);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems.join('\n')).toContain(named);
  });

  it('lists every problem at once', () => {
    const result = parseBudgetConfig({
      BUDGET_FLOOR_USD: 'x',
      BOT_OWNER_IDS: 'y',
      BUDGET_ALERT_CHANNEL_ID: 'z',
    });
    expect(result.ok ? [] : result.problems).toHaveLength(3);
  });
});
