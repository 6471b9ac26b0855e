/**
 * A budget write that must reach the database, retried while the database is away: a settlement (the ledger row of
 * a generation the service charged) or a release. The reservation it closes stays in the database meanwhile and
 * keeps holding its estimate, so spending fails closed until the write lands; if it never does (the database is
 * away past the reservation's life, or the process stops), the reservation expires into an uncertain ledger row.
 */
import type { Logger } from '../log.ts';

const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;

/** What {@link writeLater} retries, and for how long. */
export interface LaterWrite {
  /** `settlement` or `release`, for the log. */
  readonly what: string;
  readonly reservationId: number;
  /** The write; it may run again after a failure that left it done (it must be idempotent, as the guard's are). */
  readonly write: () => Promise<unknown>;
  /** Why the first attempt failed. */
  readonly error: unknown;
  /** Retries stop after this long: the reservation has expired by then and another decision closes it. */
  readonly forMs: number;
  readonly logger: Logger;
  /** Delays, for tests: the first retry's (doubling after each failure) and the longest. */
  readonly delaysMs?: { readonly first: number; readonly max: number } | undefined;
}

/** Retries `write` in the background, with a doubling delay, until it succeeds or `forMs` has passed. */
export function writeLater(later: LaterWrite): void {
  const { what, reservationId, logger } = later;
  const giveUpAt = Date.now() + later.forMs;
  let delay = later.delaysMs?.first ?? FIRST_DELAY_MS;
  const maxDelay = later.delaysMs?.max ?? MAX_DELAY_MS;
  logger.warn(`could not write a budget ${what}; retrying while the database is away`, {
    reservation: reservationId,
    err: later.error,
  });
  const attempt = (): void => {
    const timer = setTimeout(() => {
      later.write().then(
        () =>
          logger.info(`budget ${what} written after the database came back`, { reservation: reservationId }),
        (error: unknown) => {
          if (Date.now() + delay >= giveUpAt) {
            logger.error(
              `gave up writing a budget ${what}: its reservation becomes an uncertain ledger row once it expires`,
              { reservation: reservationId, err: error },
            );
            return;
          }
          delay = Math.min(delay * 2, maxDelay);
          attempt();
        },
      );
    }, delay);
    // A stopping process does not wait for it: what it leaves is reconciled at the next start.
    timer.unref();
  };
  attempt();
}
