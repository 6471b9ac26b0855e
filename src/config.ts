import { type BudgetConfig, parseBudgetConfig } from './budget/config.ts';
import { type CacheConfig, parseCacheConfig } from './cache/config.ts';
import { isSnowflake } from './discord/snowflake.ts';
import { LOG_LEVELS, type LogLevel } from './log.ts';
import { type PrivacyConfig, parsePrivacyConfig } from './privacy/config.ts';
import { parseShardConfig, type ShardConfig } from './shard/config.ts';
import type { DatabaseConfig } from './storage/open.ts';
import { parseTtsConfig } from './tts/config.ts';
import type { TtsConfig } from './tts/types.ts';
import { DEFAULT_FRAMES_PER_PACKET } from './voice/packet-defaults.ts';
import { parseUserInstallConfig, type UserInstallConfig } from './voice-message/user-install.ts';

/** The silence between two queued utterances when none is configured: a breath, so messages stay apart. */
export const DEFAULT_UTTERANCE_PAUSE_MS = 120;

/** Herald's whole configuration, parsed once at start-up. */
export interface Config {
  readonly discord: {
    readonly token: string;
    readonly applicationId: string;
    /** REST base (e.g. a REST proxy); discord.js's default when undefined. */
    readonly restUrl: string | undefined;
  };
  readonly tts: TtsConfig & {
    /** Speaker id or name used when neither the member nor the server chose one. */
    readonly defaultSpeaker: string | undefined;
  };
  /** Where data lives: a SQLite file (or ':memory:'), or a PostgreSQL server shared by several processes. */
  readonly database: DatabaseConfig;
  readonly logLevel: LogLevel;
  /** Leave the voice channel after this long with nothing to say. */
  readonly idleTimeoutMs: number;
  /** Silence between two queued utterances, in ms (`UTTERANCE_PAUSE_MS`). */
  readonly utterancePauseMs: number;
  /** `VOICE_FRAMES_PER_PACKET`: up to this many 20 ms frames in one voice packet (1–3; 3 by default). */
  readonly framesPerPacket: number;
  /**
   * `HERALD_RUSH_SCHEDULER` (`on` by default; `off` is a benchmark diagnostic): starts of utterances pass the start
   * gate (src/rush), so a rush of them never holds the audio cycle of the streams playing (docs/rush.md).
   */
  readonly rushScheduler: boolean;
  /** The budget guard's floor, warning level, alert channel, price, member rate and operators. */
  readonly budget: BudgetConfig;
  /** The audio cache: size bound, age, longest cached utterance, folder. */
  readonly cache: CacheConfig;
  /** `QUEUE_MAX_PER_SERVER`, `QUEUE_MAX_PER_MEMBER`: utterances waiting in one server, and of one member there. */
  readonly queueLimits: { readonly perServer: number; readonly perMember: number };
  /** The operations endpoint (`/metrics`, `/healthz`, `/readyz`, the status page); off when `port` is undefined. */
  readonly ops: {
    /** `METRICS_PORT`; undefined keeps the endpoint off. 0 picks a free port (tests). */
    readonly port: number | undefined;
    /** `METRICS_HOST`: the address to bind, loopback by default. */
    readonly host: string;
    /** `METRICS_TOKEN`: when set, the status page and `/metrics` ask for it; never logged. */
    readonly token: string | undefined;
  };
  /** `SHARD_COUNT` and `SHARD_IDS` (or the shard the ShardingManager spawned this process for); one shard by default. */
  readonly shards: ShardConfig;
  /** `USER_INSTALL` and `USER_INSTALL_CHARS_PER_DAY`: voice messages from Herald installed to a member's account. */
  readonly userInstall: UserInstallConfig;
  /** `DATA_RETENTION_DAYS`: how long a server's data outlives Herald's removal from it. */
  readonly privacy: PrivacyConfig;
}

/** The environment as read: every value a string or absent. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Result of {@link parseConfig}: the config, or every problem found. */
export type ConfigResult = { ok: true; value: Config } | { ok: false; problems: string[] };

/**
 * Parses and validates the configuration from an environment object. Every problem is listed, each naming its
 * variable; secrets are never echoed.
 */
export function parseConfig(env: Env): ConfigResult {
  const problems: string[] = [];
  const value = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };

  const token = value('DISCORD_TOKEN');
  if (token === undefined)
    problems.push('DISCORD_TOKEN is missing: the bot token from the Discord developer portal.');
  else if (!/^[\w.-]{50,}$/.test(token))
    problems.push('DISCORD_TOKEN does not look like a Discord bot token.');

  const applicationId = value('DISCORD_APPLICATION_ID');
  if (applicationId === undefined) problems.push('DISCORD_APPLICATION_ID is missing: the application id.');
  else if (!isSnowflake(applicationId)) problems.push('DISCORD_APPLICATION_ID must be a numeric Discord id.');

  const restUrl = value('DISCORD_REST_URL');
  if (restUrl !== undefined && !isHttpUrl(restUrl)) problems.push('DISCORD_REST_URL must be an http(s) URL.');

  const tts = parseTtsConfig(env);
  if (!tts.ok) problems.push(...tts.problems);

  const budget = parseBudgetConfig(env);
  if (!budget.ok) problems.push(...budget.problems);

  const shards = parseShardConfig(env);
  if (!shards.ok) problems.push(...shards.problems);

  const userInstall = parseUserInstallConfig(env);
  if (!userInstall.ok) problems.push(...userInstall.problems);

  const privacy = parsePrivacyConfig(env);
  if (!privacy.ok) problems.push(...privacy.problems);

  const database = parseDatabaseUrl(
    value('DATABASE_URL') ?? 'sqlite:./data/herald.sqlite',
    value('DATABASE_POOL_SIZE'),
    problems,
  );

  const cache = parseCacheConfig(env, database.kind === 'sqlite' ? database.path : '');
  if (!cache.ok) problems.push(...cache.problems);

  const logLevel = (value('LOG_LEVEL') ?? 'info').toLowerCase();
  if (!isLogLevel(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}.`);

  const idleSeconds = Number(value('IDLE_TIMEOUT_SECONDS') ?? '300');
  if (!Number.isFinite(idleSeconds) || idleSeconds < 1 || idleSeconds > 86_400) {
    problems.push('IDLE_TIMEOUT_SECONDS must be a number of seconds between 1 and 86400.');
  }

  const pauseMs = Number(value('UTTERANCE_PAUSE_MS') ?? String(DEFAULT_UTTERANCE_PAUSE_MS));
  if (!Number.isInteger(pauseMs) || pauseMs < 0 || pauseMs > 2_000) {
    problems.push('UTTERANCE_PAUSE_MS must be a whole number of milliseconds between 0 and 2000.');
  }

  const count = (name: string, fallback: number, max: number): number => {
    const raw = value(name);
    const parsed = raw === undefined ? fallback : Number(raw);
    if (!/^\d+$/.test(raw ?? '1') || !Number.isSafeInteger(parsed) || parsed < 1 || parsed > max) {
      problems.push(`${name} must be a whole number between 1 and ${max}.`);
    }
    return parsed;
  };
  const framesPerPacket = count('VOICE_FRAMES_PER_PACKET', DEFAULT_FRAMES_PER_PACKET, 3);
  const rushScheduler = (value('HERALD_RUSH_SCHEDULER') ?? 'on').toLowerCase();
  if (rushScheduler !== 'on' && rushScheduler !== 'off') {
    problems.push('HERALD_RUSH_SCHEDULER must be on or off (off only to measure Herald without it).');
  }
  const perServer = count('QUEUE_MAX_PER_SERVER', 50, 1000);
  const perMember = count('QUEUE_MAX_PER_MEMBER', 10, 1000);
  if (perMember > perServer) problems.push('QUEUE_MAX_PER_MEMBER cannot be above QUEUE_MAX_PER_SERVER.');
  const metricsPortText = value('METRICS_PORT');
  const metricsPort = metricsPortText === undefined ? undefined : Number(metricsPortText);
  if (
    metricsPort !== undefined &&
    !(Number.isInteger(metricsPort) && metricsPort >= 0 && metricsPort <= 65_535)
  ) {
    problems.push('METRICS_PORT must be a port number (0–65535); leave it unset to keep the endpoint off.');
  }
  const metricsToken = value('METRICS_TOKEN');
  // A short token is guessable, and the logger only scrubs secrets of 8 characters or more.
  if (metricsToken !== undefined && metricsToken.length < 16) {
    problems.push('METRICS_TOKEN must be at least 16 characters (e.g. `openssl rand -hex 24`).');
  }

  if (
    problems.length > 0 ||
    !tts.ok ||
    !budget.ok ||
    !cache.ok ||
    !shards.ok ||
    !userInstall.ok ||
    !privacy.ok ||
    token === undefined ||
    applicationId === undefined ||
    !isLogLevel(logLevel)
  ) {
    return { ok: false, problems };
  }
  return {
    ok: true,
    value: {
      discord: { token, applicationId, restUrl },
      tts: { ...tts.value, defaultSpeaker: value('TTS_DEFAULT_SPEAKER') },
      database,
      logLevel,
      idleTimeoutMs: idleSeconds * 1000,
      utterancePauseMs: pauseMs,
      framesPerPacket,
      rushScheduler: rushScheduler !== 'off',
      budget: budget.value,
      cache: cache.value,
      queueLimits: { perServer, perMember },
      ops: { port: metricsPort, host: value('METRICS_HOST') ?? '127.0.0.1', token: metricsToken },
      shards: shards.value,
      userInstall: userInstall.value,
      privacy: privacy.value,
    },
  };
}

/** The variables that say which Discord application and which TTS service Herald uses. */
const IDENTITY_VARIABLES = [
  'DISCORD_TOKEN',
  'DISCORD_APPLICATION_ID',
  'DISCORD_REST_URL',
  'TTS_BASE_URL',
  'TTS_API_KEY',
] as const;

/**
 * True when none of the Discord and TTS variables is set (blank counts as unset): a first run, which gets the
 * sandbox. Any one of them set means the operator meant the real bot, and missing ones are problems.
 */
export function isUnconfigured(env: Env): boolean {
  return IDENTITY_VARIABLES.every((name) => (env[name]?.trim() ?? '') === '');
}

/** The secrets in a config, for the logger to scrub. */
export function secretsOf(config: Config): string[] {
  const secrets = [config.discord.token, config.tts.apiKey, ...(config.ops.token ? [config.ops.token] : [])];
  if (config.database.kind === 'postgres') {
    // The database password, as written in the URL and decoded.
    const password = URL.parse(config.database.url)?.password ?? '';
    if (password !== '') secrets.push(password, decodeURIComponent(password));
  }
  return secrets;
}

/** Connections per process when `DATABASE_POOL_SIZE` is unset: enough for a shard's concurrent decisions. */
export const DEFAULT_DATABASE_POOL_SIZE = 10;

function parseDatabaseUrl(url: string, poolText: string | undefined, problems: string[]): DatabaseConfig {
  const sqlite = (path: string): DatabaseConfig => ({ kind: 'sqlite', path });
  if (url === ':memory:' || url === 'sqlite::memory:') return sqlite(':memory:');
  if (/^postgres(ql)?:\/\//.test(url)) {
    const poolSize = Number(poolText ?? DEFAULT_DATABASE_POOL_SIZE);
    if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 100) {
      problems.push('DATABASE_POOL_SIZE must be a whole number from 1 to 100.');
    }
    try {
      new URL(url);
    } catch {
      // The URL itself may hold a password: never echo it.
      problems.push('DATABASE_URL is not a valid postgres:// URL.');
    }
    return { kind: 'postgres', url, poolSize };
  }
  const match = /^(?:sqlite|file):(?:\/\/)?(.+)$/.exec(url);
  if (match?.[1]) return sqlite(match[1]);
  if (!url.includes(':')) return sqlite(url);
  problems.push(
    'DATABASE_URL must be sqlite:<path> (for example sqlite:./data/herald.sqlite) or postgres://user:password@host/database.',
  );
  return sqlite('');
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function isLogLevel(level: string): level is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(level);
}
