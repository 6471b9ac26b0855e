import type { Logger } from '../log.ts';

/**
 * How long after a shard process has started Herald makes its one full collection: its client has logged in and its
 * voice sessions are restored, and the bursts of a start are over.
 */
export const SETTLE_COLLECTION_DELAY_MS = 10_000;

/**
 * One full collection of a shard process's heap once it has started (issue 44, docs/rush.md, "The first collection").
 *
 * V8 starts a full collection whenever the external memory it counts (`ArrayBuffer`s above all) passes 64 MB above
 * its lowest since the last full collection. A shard process with 256 MB of room in its old generation
 * (`SHARD_OLD_SPACE_MB`) makes no full collection for minutes after it starts, so that lowest is the nothing it held
 * at its first instant, and its limit is 64 MB outright. A rush of 250 starts a process (the clips, what each start
 * holds until it plays) crosses it, in all four processes within a second or two, and each collection held its
 * process's packets. Collected once its start is over, a process measures from what it then holds. `gc` is V8's
 * (`--expose-gc`, in `SHARD_EXEC_ARGV`); without it, nothing is done.
 */
export function collectOnceSettled(
  gc: (() => void) | undefined,
  logger: Pick<Logger, 'debug'>,
  delayMs = SETTLE_COLLECTION_DELAY_MS,
): void {
  if (typeof gc !== 'function') return;
  setTimeout(() => {
    const started = performance.now();
    gc();
    logger.debug('settle collection done', { ms: Math.round(performance.now() - started) });
  }, delayMs).unref();
}
