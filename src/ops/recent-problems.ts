import type { LogFields, Logger } from '../log.ts';
import type { RecentProblem } from './state.ts';

// In a file of its own (no discord.js, no metrics): the sharding manager wraps its logger with it before it spawns
// its shards, and loads nothing of the endpoint until then.

/** A logger that also keeps its latest warnings and errors for the status page; see {@link RecentProblem}. */
export function keepRecentProblems(
  logger: Logger,
  options: { readonly secrets: readonly string[]; readonly limit?: number; readonly now?: () => number },
): { readonly logger: Logger; recent(): readonly RecentProblem[] } {
  const limit = options.limit ?? 20;
  const now = options.now ?? Date.now;
  const secrets = options.secrets.filter((secret) => secret.length >= 8);
  const scrub = (text: string): string =>
    secrets.reduce((acc, secret) => acc.split(secret).join('[redacted]'), text);
  const problems: RecentProblem[] = [];

  const keep = (level: 'warn' | 'error', message: string, fields: LogFields | undefined): void => {
    const error = Object.values(fields ?? {}).find((value): value is Error => value instanceof Error);
    problems.unshift({
      at: now(),
      level,
      message: scrub(message),
      detail: error ? scrub(`${error.name}: ${error.message}`) : undefined,
    });
    problems.length = Math.min(problems.length, limit);
  };
  const wrap = (target: Logger): Logger => ({
    debug: (message, fields) => target.debug(message, fields),
    info: (message, fields) => target.info(message, fields),
    warn: (message, fields) => {
      keep('warn', message, fields);
      target.warn(message, fields);
    },
    error: (message, fields) => {
      keep('error', message, fields);
      target.error(message, fields);
    },
    child: (fields) => wrap(target.child(fields)),
  });
  return { logger: wrap(logger), recent: () => [...problems] };
}
