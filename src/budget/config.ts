import { isSnowflake } from '../discord/snowflake.ts';

/** The budget's configuration, parsed once from the environment by {@link parseBudgetConfig}. */
export interface BudgetConfig {
  /** `BUDGET_FLOOR_USD` (default 0): no request may take the balance below it. */
  readonly floorUsd: number;
  /** `BUDGET_WARN_USD`: the operator is warned once each time the balance falls to it; above the floor. */
  readonly warnUsd: number | undefined;
  /** `BUDGET_ALERT_CHANNEL_ID`: the one channel for budget alerts; otherwise each server's own, otherwise the log. */
  readonly alertChannelId: string | undefined;
  /** `BUDGET_PRICE_PER_CHAR_USD`: the price assumed until the service's first response teaches the real one. */
  readonly pricePerCharUsd: number | undefined;
  /** `BUDGET_MEMBER_CHARS_PER_MINUTE` (default 5000): characters one user may have spoken in any 60 s. */
  readonly memberCharsPerMinute: number;
  /**
   * `BOT_OWNER_IDS`: Discord user ids (comma or space separated) allowed to run `/budget recheck`; when empty,
   * the application's owner (or its team's members) as Discord reports them.
   */
  readonly ownerIds: readonly string[];
  /** `BUDGET_RECHECK_MINUTES` (default 5; 0 turns it off): how often Herald re-checks a stop by itself. */
  readonly recheckIntervalMs: number;
}

/** Result of {@link parseBudgetConfig}: the config, or every problem found, each naming its variable. */
export type BudgetConfigResult =
  | { readonly ok: true; readonly value: BudgetConfig }
  | { readonly ok: false; readonly problems: string[] };

/** Per-member default: above the 4,000 characters `/speak` accepts, so one long message always fits. */
export const DEFAULT_MEMBER_CHARS_PER_MINUTE = 5_000;

/** How often a stop is re-checked by default: a top-up is noticed within five minutes, for one character each. */
export const DEFAULT_RECHECK_MINUTES = 5;

/** Parses the budget variables from an environment object; never throws. */
export function parseBudgetConfig(env: Readonly<Record<string, string | undefined>>): BudgetConfigResult {
  const problems: string[] = [];
  const value = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };
  const usd = (name: string): number | undefined => {
    const raw = value(name);
    if (raw === undefined) return undefined;
    const parsed = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw) || !Number.isFinite(parsed)) {
      problems.push(`${name} must be an amount in US dollars, such as 0.50.`);
      return undefined;
    }
    return parsed;
  };

  const floorUsd = usd('BUDGET_FLOOR_USD') ?? 0;
  const warnUsd = usd('BUDGET_WARN_USD');
  if (warnUsd !== undefined && warnUsd <= floorUsd) {
    problems.push('BUDGET_WARN_USD must be above BUDGET_FLOOR_USD: the warning comes before the stop.');
  }

  const alertChannelId = value('BUDGET_ALERT_CHANNEL_ID');
  if (alertChannelId !== undefined && !isSnowflake(alertChannelId)) {
    problems.push('BUDGET_ALERT_CHANNEL_ID must be a numeric Discord channel id.');
  }

  const pricePerCharUsd = usd('BUDGET_PRICE_PER_CHAR_USD');
  if (pricePerCharUsd === 0) problems.push('BUDGET_PRICE_PER_CHAR_USD must be above 0 (or left unset).');

  const rate = value('BUDGET_MEMBER_CHARS_PER_MINUTE');
  const memberCharsPerMinute = rate === undefined ? DEFAULT_MEMBER_CHARS_PER_MINUTE : Number(rate);
  if (!/^\d+$/.test(rate ?? '1') || !Number.isSafeInteger(memberCharsPerMinute) || memberCharsPerMinute < 1) {
    problems.push('BUDGET_MEMBER_CHARS_PER_MINUTE must be a whole number of characters, at least 1.');
  }

  const ownerIds = (value('BOT_OWNER_IDS') ?? '').split(/[\s,]+/).filter((id) => id !== '');
  if (ownerIds.some((id) => !isSnowflake(id))) {
    problems.push('BOT_OWNER_IDS must be numeric Discord user ids, separated by commas.');
  }

  const recheck = value('BUDGET_RECHECK_MINUTES');
  const recheckMinutes = recheck === undefined ? DEFAULT_RECHECK_MINUTES : Number(recheck);
  if (!/^\d+(\.\d+)?$/.test(recheck ?? '1') || !(recheckMinutes >= 0 && recheckMinutes <= 1440)) {
    problems.push('BUDGET_RECHECK_MINUTES must be a number of minutes between 0 (off) and 1440.');
  } else if (recheckMinutes > 0 && recheckMinutes < 0.05) {
    problems.push(
      'BUDGET_RECHECK_MINUTES must be at least 0.05 (3 s), or 0 to turn it off: each re-check is a paid call.',
    );
  }

  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: {
      floorUsd,
      warnUsd,
      alertChannelId,
      pricePerCharUsd,
      memberCharsPerMinute,
      ownerIds,
      recheckIntervalMs: recheckMinutes * 60_000,
    },
  };
}
