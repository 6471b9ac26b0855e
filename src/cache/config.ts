import { dirname, join } from 'node:path';

/** The audio cache's configuration, parsed once from the environment by {@link parseCacheConfig}. */
export interface CacheConfig {
  /** `AUDIO_CACHE_MB` (default 256) in bytes; 0 turns the cache off. */
  readonly maxBytes: number;
  /** `AUDIO_CACHE_DAYS` (default 30) in milliseconds: older entries are regenerated. */
  readonly maxAgeMs: number;
  /** `AUDIO_CACHE_MAX_CHARS` (default 200): longer utterances are never stored. */
  readonly maxChars: number;
  /**
   * `AUDIO_CACHE_DIR`: where the files live; by default `audio-cache` beside the database. One folder per machine:
   * every Herald process here (each shard of a sharding manager) reads and writes the same one.
   */
  readonly dir: string;
}

/** Result of {@link parseCacheConfig}: the config, or every problem found, each naming its variable. */
export type CacheConfigResult =
  | { readonly ok: true; readonly value: CacheConfig }
  | { readonly ok: false; readonly problems: string[] };

/** Defaults of the cache variables. */
export const CACHE_DEFAULTS = { megabytes: 256, days: 30, maxChars: 200 } as const;

const DAY_MS = 86_400_000;

/** A folder a shard process kept its own cache in before the folder was shared (the shard's id is its group). */
export const SHARD_CACHE_FOLDER = /^shard-(\d+)$/;

/**
 * Parses the cache variables; never throws. `databasePath` places the default folder beside the database
 * (`./data/audio-cache` when the database is in memory). Every process of the machine uses the whole folder and the
 * whole `AUDIO_CACHE_MB`: they bound the folder together (see disk.ts).
 */
export function parseCacheConfig(
  env: Readonly<Record<string, string | undefined>>,
  databasePath: string,
): CacheConfigResult {
  const problems: string[] = [];
  const value = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };
  const number = (name: string, fallback: number, rule: RegExp, sentence: string): number => {
    const raw = value(name);
    if (raw === undefined) return fallback;
    if (!rule.test(raw) || !Number.isFinite(Number(raw))) {
      problems.push(`${name} ${sentence}`);
      return fallback;
    }
    return Number(raw);
  };
  const megabytes = number(
    'AUDIO_CACHE_MB',
    CACHE_DEFAULTS.megabytes,
    /^\d+(\.\d+)?$/,
    'must be a size in megabytes (0 turns the audio cache off).',
  );
  const days = number('AUDIO_CACHE_DAYS', CACHE_DEFAULTS.days, /^\d+(\.\d+)?$/, 'must be a number of days.');
  if (days <= 0) problems.push('AUDIO_CACHE_DAYS must be above 0.');
  const maxChars = number(
    'AUDIO_CACHE_MAX_CHARS',
    CACHE_DEFAULTS.maxChars,
    /^\d+$/,
    'must be a whole number of characters.',
  );
  const fallbackDir =
    databasePath === ':memory:' || databasePath === ''
      ? join('data', 'audio-cache')
      : join(dirname(databasePath), 'audio-cache');
  const machineDir = value('AUDIO_CACHE_DIR') ?? fallbackDir;
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: {
      maxBytes: Math.floor(megabytes * 1024 * 1024),
      maxAgeMs: days * DAY_MS,
      maxChars,
      dir: machineDir,
    },
  };
}
