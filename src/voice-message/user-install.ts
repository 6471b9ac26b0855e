import type { BudgetGuard } from '../budget/index.ts';
import { formatCount } from '../discord/member-facing.ts';

/** Herald as a user-installed app (`USER_INSTALL`), off by default: the operator pays for what members send. */
export interface UserInstallConfig {
  /** `USER_INSTALL=on`: `/speak` is registered for user installs too (voice messages in DMs and other servers). */
  readonly enabled: boolean;
  /** `USER_INSTALL_CHARS_PER_DAY`: characters one member's user-installed voice messages may use per UTC day. */
  readonly charsPerDay: number;
}

/** The daily allowance when `USER_INSTALL_CHARS_PER_DAY` is unset: a few dozen short messages. */
export const DEFAULT_USER_INSTALL_CHARS_PER_DAY = 2_000;

/**
 * What user-installed voice messages are kept under in the budget's ledger, in place of a server id: one budget
 * and one ledger, and the member's day is the sum of this "server"'s rows of theirs.
 */
export const USER_INSTALL_LEDGER_ID = 'user-install';

/** Parses `USER_INSTALL` and `USER_INSTALL_CHARS_PER_DAY`; every problem names its variable. */
export function parseUserInstallConfig(
  env: Readonly<Record<string, string | undefined>>,
):
  | { readonly ok: true; readonly value: UserInstallConfig }
  | { readonly ok: false; readonly problems: string[] } {
  const problems: string[] = [];
  const switchText = (env.USER_INSTALL?.trim() ?? '').toLowerCase();
  const enabled = ['on', 'true', '1', 'yes'].includes(switchText);
  if (!enabled && !['', 'off', 'false', '0', 'no'].includes(switchText)) {
    problems.push('USER_INSTALL must be on or off.');
  }
  const charsText = env.USER_INSTALL_CHARS_PER_DAY?.trim() ?? '';
  const charsPerDay = charsText === '' ? DEFAULT_USER_INSTALL_CHARS_PER_DAY : Number(charsText);
  if (!/^\d*$/.test(charsText) || !Number.isSafeInteger(charsPerDay) || charsPerDay < 1) {
    problems.push('USER_INSTALL_CHARS_PER_DAY must be a whole number of characters, at least 1.');
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: { enabled, charsPerDay } };
}

/**
 * Whether a member's user-installed voice message of `characters` fits their day: undefined when it does, else
 * the sentence. Counted from the ledger (cache hits cost nothing and are not in it).
 */
export async function userInstallRefusal(
  budget: Pick<BudgetGuard, 'spendToday'>,
  config: UserInstallConfig,
  userId: string,
  characters: number,
): Promise<string | undefined> {
  const today = await budget.spendToday(USER_INSTALL_LEDGER_ID);
  const used = today.members.find((member) => member.userId === userId)?.characters ?? 0;
  if (used + characters <= config.charsPerDay) return undefined;
  const limit = formatCount(config.charsPerDay);
  return used === 0
    ? `That message is ${formatCount(characters)} characters, more than the ${limit} characters a day of voice messages one member may send with Herald installed to their account.`
    : `You have used ${formatCount(used)} of your ${limit} characters of voice messages today (UTC); this one needs ${formatCount(characters)}. Try a shorter one, or again tomorrow.`;
}
