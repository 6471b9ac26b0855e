import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { type DestinationStream, pino } from 'pino';
import type PinoPretty from 'pino-pretty';

// pino-pretty is loaded only for a terminal: every shard process of a restart would otherwise load it (35 ms on 2
// cores) for JSON lines that never use it.
const require = createRequire(import.meta.url);

/** Log levels, least to most severe. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Structured context attached to a log line. An `Error` anywhere at the top level is logged with its name, code,
 * message, stack and cause chain.
 */
export type LogFields = Readonly<Record<string, unknown>>;

/** The one logger every part of Herald receives; nothing else writes to the console. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line (e.g. `{ guild }`, `{ shard }`, `{ utterance }`). */
  child(fields: LogFields): Logger;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Lines below this level are dropped. */
  readonly level: LogLevel;
  /** Strings replaced by `[redacted]` wherever they appear in a line (the Discord token, the TTS key). */
  readonly secrets?: readonly string[];
  /** Where finished lines go (without the newline); standard error by default. */
  readonly write?: (line: string) => void;
  /**
   * Human-readable lines (pino-pretty) instead of JSON. Default: when no `write` is given and standard error is a
   * terminal.
   */
  readonly pretty?: boolean;
  /** Clock, for tests. */
  readonly now?: () => Date;
}

/**
 * Field paths pino's redaction censors whatever their value: the names secrets travel under. The string scrub in
 * {@link createLogger} catches a secret that appears anywhere else (quoted in a message, inside an error).
 */
export const REDACTED_PATHS: readonly string[] = [
  'token',
  '*.token',
  'apiKey',
  '*.apiKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  'password',
  '*.password',
];

const REDACTED = '[redacted]';

/**
 * Makes a logger on pino: one JSON object per line (`time`, `level` as a word, `msg`, bound and given fields), or
 * pino-pretty's form on a terminal. Secrets are removed twice: pino's redaction by field name, then every
 * configured secret string scrubbed from the finished line.
 */
export function createLogger(options: LoggerOptions): Logger {
  // Short strings would redact innocent text; real tokens and keys are long.
  const secrets = (options.secrets ?? []).filter((secret) => secret.length >= 8);
  const scrub = (text: string): string =>
    secrets.reduce((acc, secret) => acc.split(secret).join(REDACTED), text);
  const pretty = options.pretty ?? (options.write === undefined && process.stderr.isTTY === true);

  const write = options.write;
  const toLine = (text: string): string => (text.endsWith('\n') ? text.slice(0, -1) : text);
  let sink: (line: string) => void;
  if (pretty) {
    const pinoPretty = require('pino-pretty') as typeof PinoPretty;
    const prettyStream = pinoPretty({
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      destination: write
        ? new Writable({
            write(chunk: Buffer, _encoding, done) {
              write(toLine(chunk.toString('utf8')));
              done();
            },
          })
        : 2,
    });
    sink = (line) => prettyStream.write(line);
  } else {
    sink = write ? (line) => write(toLine(line)) : (line) => process.stderr.write(line);
  }
  const destination: DestinationStream = { write: (line: string) => sink(scrub(line)) };
  const now = options.now;

  const root = pino(
    {
      level: options.level,
      base: { pid: process.pid },
      redact: { paths: [...REDACTED_PATHS], censor: REDACTED },
      // Errors are serialised before pino sees them; this keeps pino's own `err` serializer from redoing it.
      serializers: { err: (value: unknown) => (value instanceof Error ? serialiseError(value) : value) },
      ...(now
        ? { timestamp: () => `,"time":"${now().toISOString()}"` }
        : { timestamp: pino.stdTimeFunctions.isoTime }),
      // pino-pretty reads numeric levels; JSON lines carry the word, which reads well and greps well.
      ...(pretty ? {} : { formatters: { level: (label: string) => ({ level: label }) } }),
    },
    destination,
  );

  const wrap = (target: pino.Logger): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
      if (!target.isLevelEnabled(level)) return;
      if (fields === undefined) target[level](message);
      else target[level](serialiseErrors(fields), message);
    };
    return {
      debug: (message, fields) => emit('debug', message, fields),
      info: (message, fields) => emit('info', message, fields),
      warn: (message, fields) => emit('warn', message, fields),
      error: (message, fields) => emit('error', message, fields),
      child: (fields) => {
        // Made at its first line: a child per utterance costs pino a bindings string each, which 1,000 utterances
        // starting at once pay for nothing while debug lines are off. A child logs at its parent's level.
        let made: Logger | undefined;
        const child = () => {
          made ??= wrap(target.child(serialiseErrors(fields)));
          return made;
        };
        const lazy = (level: LogLevel) => (message: string, extra?: LogFields) => {
          if (made !== undefined || target.isLevelEnabled(level)) child()[level](message, extra);
        };
        return {
          debug: lazy('debug'),
          info: lazy('info'),
          warn: lazy('warn'),
          error: lazy('error'),
          child: (more) => child().child(more),
        };
      },
    };
  };
  return wrap(root);
}

/** A logger that drops everything, for tests that do not look at logs. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });

/** Replaces every top-level `Error` with {@link serialiseError}'s form. */
function serialiseErrors(fields: LogFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields))
    out[key] = value instanceof Error ? serialiseError(value) : value;
  return out;
}

/** Causes followed before the chain is cut (a cycle or a pathological chain must not hang a log line). */
const MAX_CAUSE_DEPTH = 5;

/**
 * An error as a log field: type, message, stack, its own primitive properties (`code`, `status`, `requestId`, …)
 * and its cause chain, each cause serialised the same way. Object-valued properties are left out: some libraries'
 * errors carry whole request bodies.
 */
export function serialiseError(error: Error, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = { type: error.name, message: error.message };
  for (const [key, value] of Object.entries(error)) {
    if (key === 'cause' || key in out) continue;
    if (value === null || ['string', 'number', 'boolean', 'bigint'].includes(typeof value)) out[key] = value;
  }
  out.stack = error.stack;
  const cause: unknown = error.cause;
  if (cause !== undefined) {
    out.cause =
      cause instanceof Error
        ? depth < MAX_CAUSE_DEPTH
          ? serialiseError(cause, depth + 1)
          : { type: cause.name, message: cause.message }
        : cause;
  }
  if (error instanceof AggregateError && depth < MAX_CAUSE_DEPTH) {
    out.errors = error.errors.map((inner: unknown) =>
      inner instanceof Error ? serialiseError(inner, depth + 1) : inner,
    );
  }
  return out;
}
