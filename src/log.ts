/** Log levels, least to most severe. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Structured context attached to a log line. Errors are reduced to their name, code and message. */
export type LogFields = Readonly<Record<string, unknown>>;

/** The one logger every part of Herald receives; nothing else writes to the console. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Lines below this level are dropped. */
  readonly level: LogLevel;
  /** Strings replaced by `[redacted]` wherever they appear in a line (the Discord token, the TTS key). */
  readonly secrets?: readonly string[];
  /** Where finished lines go; standard error by default. */
  readonly write?: (line: string) => void;
  /** Clock, for tests. */
  readonly now?: () => Date;
}

const rank = (level: LogLevel): number => LOG_LEVELS.indexOf(level);

/** Makes a logger that writes one JSON object per line and scrubs every configured secret from it. */
export function createLogger(options: LoggerOptions): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const now = options.now ?? (() => new Date());
  // Short strings would redact innocent text; real tokens and keys are long.
  const secrets = (options.secrets ?? []).filter((secret) => secret.length >= 8);

  const scrub = (text: string): string =>
    secrets.reduce((acc, secret) => acc.split(secret).join('[redacted]'), text);

  const make = (bound: LogFields): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
      if (rank(level) < rank(options.level)) return;
      const entry = { time: now().toISOString(), level, msg: message, ...bound, ...fields };
      write(scrub(JSON.stringify(entry, replacer)));
    };
    return {
      debug: (message, fields) => emit('debug', message, fields),
      info: (message, fields) => emit('info', message, fields),
      warn: (message, fields) => emit('warn', message, fields),
      error: (message, fields) => emit('error', message, fields),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make({});
}

/** A logger that drops everything, for tests that do not look at logs. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });

function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, ...(code === undefined ? {} : { code }), message: value.message };
  }
  if (typeof value === 'bigint') return value.toString();
  return value;
}
