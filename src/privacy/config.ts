/** How long Herald keeps a server's data after it was removed from the server (`DATA_RETENTION_DAYS`). */
export interface PrivacyConfig {
  /** Days; 0 deletes at the next sweep. A re-invite within them keeps everything. */
  readonly retentionDays: number;
}

/** The grace period when `DATA_RETENTION_DAYS` is unset: a server that removed Herald by mistake has a month. */
export const DEFAULT_RETENTION_DAYS = 30;
/** Ten years: more is a typo (and Discord's developer policy asks bots not to keep data they no longer need). */
const MAX_RETENTION_DAYS = 3_650;

/** Parses `DATA_RETENTION_DAYS`; the problem names the variable. */
export function parsePrivacyConfig(
  env: Readonly<Record<string, string | undefined>>,
):
  | { readonly ok: true; readonly value: PrivacyConfig }
  | { readonly ok: false; readonly problems: string[] } {
  const text = env.DATA_RETENTION_DAYS?.trim() ?? '';
  if (text === '') return { ok: true, value: { retentionDays: DEFAULT_RETENTION_DAYS } };
  const days = Number(text);
  if (!/^\d+$/.test(text) || days > MAX_RETENTION_DAYS) {
    return {
      ok: false,
      problems: [
        `DATA_RETENTION_DAYS must be a whole number of days from 0 to ${MAX_RETENTION_DAYS} (default ${DEFAULT_RETENTION_DAYS}): how long a server's settings are kept after Herald is removed from it.`,
      ],
    };
  }
  return { ok: true, value: { retentionDays: days } };
}
