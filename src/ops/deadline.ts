/**
 * How long the database may take to answer what the operations endpoint reads from it (the readiness checks, the
 * budget's gauges of a scrape, the status page's budget and ledger). Under the sharding manager's 5 s wait for a
 * shard's answer, and under Prometheus's default 10 s scrape timeout.
 */
export const DEFAULT_DATABASE_TIMEOUT_MS = 3_000;

/** Something the endpoint waited for did not answer in time; `message` is a sentence an operator can act on. */
export class DeadlineError extends Error {
  /** Stable, for programs to switch on. */
  readonly code = 'HERALD_DEADLINE';
  readonly timeoutMs: number;

  constructor(what: string, timeoutMs: number) {
    super(`${what} did not answer within ${timeoutMs} ms`);
    this.name = 'DeadlineError';
    this.timeoutMs = timeoutMs;
  }
}

/**
 * `work`'s result, or a rejection with a {@link DeadlineError} naming `what` once `timeoutMs` have passed. The work
 * is not cancelled, only no longer waited for: what ends it underneath is the database pool's own connect timeout.
 * @throws (rejects) what `work` throws, or the {@link DeadlineError}.
 */
export async function within<T>(timeoutMs: number, what: string, work: () => T | Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(what, timeoutMs)), timeoutMs);
  });
  try {
    // `then` turns a synchronous throw into a rejection; the race handles a late one, so none goes unhandled.
    return await Promise.race([Promise.resolve().then(work), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
