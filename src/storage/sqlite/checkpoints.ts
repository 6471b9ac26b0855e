import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/**
 * How often the shard manager copies the write-ahead log into the database file. The shards write some 20 pages an
 * utterance: in a rush of 1,000 that is a few thousand pages a second over four processes, so a log checkpointed
 * twice a second stays at a few megabytes.
 */
export const WAL_CHECKPOINT_INTERVAL_MS = 500;

/**
 * A shard process whose manager checkpoints the log still checkpoints at this many pages (40 MB) of log: a backstop,
 * so that a manager that stopped checkpointing (stalled, or gone) cannot let the log grow without bound. SQLite's
 * own default is 1,000 pages.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;

/** What one checkpoint did, as SQLite reports it. */
export interface CheckpointOutcome {
  /** True when another connection's checkpoint (or a writer) kept this one from running. */
  readonly busy: boolean;
  /** Pages in the log, and how many of them are now in the database file. */
  readonly logPages: number;
  readonly checkpointedPages: number;
}

/** Checkpoints that run on a timer until stopped. */
export interface WalCheckpoints {
  /** Runs one checkpoint now (the timer's work), for tests and a last one before stopping. */
  checkpointNow(): CheckpointOutcome;
  /** Stops the timer and closes the connection. Idempotent. */
  stop(): void;
}

/**
 * Copies the write-ahead log of the SQLite file at `path` into the database file every `intervalMs`, on a connection
 * of its own, in the process that calls it (the shard manager, which plays no audio).
 *
 * Why: SQLite checkpoints by itself in whichever connection commits the transaction that fills the log past 1,000
 * pages, on that connection's thread. In a shard process that is the event loop that sends the voice packets: a
 * checkpoint copies some 4 MB and syncs two files, 2 ms of CPU and up to 28 ms of wall time counted in a 1,000-server
 * rush (11–30 commits a shard process over 5 ms; `bench/sqlite-calls.ts`), each a stall every playing stream of that
 * process waits behind. Shards under a manager leave it here ({@link BACKSTOP_AUTOCHECKPOINT_PAGES}).
 *
 * A checkpoint is PASSIVE: it never waits for readers or writers, and copies what no reader still needs; what it
 * could not copy, the next one does. A failure is given to `onError` and the timer goes on.
 */
export function startWalCheckpoints(
  path: string,
  options: { readonly intervalMs?: number; readonly onError: (error: unknown) => void },
): WalCheckpoints {
  // The manager may start before any shard made the file; it is a database without a log until one does.
  mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  // The writers hold the write lock for a few milliseconds; a checkpoint that finds it taken waits for none of it.
  db.exec('PRAGMA busy_timeout = 0');
  const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  const checkpointNow = (): CheckpointOutcome => {
    const row = checkpoint.get() as { busy: number; log: number; checkpointed: number } | undefined;
    return {
      busy: row?.busy === 1,
      logPages: Math.max(0, row?.log ?? 0),
      checkpointedPages: Math.max(0, row?.checkpointed ?? 0),
    };
  };
  const timer = setInterval(() => {
    try {
      checkpointNow();
    } catch (error) {
      options.onError(error);
    }
  }, options.intervalMs ?? WAL_CHECKPOINT_INTERVAL_MS);
  timer.unref();
  return {
    checkpointNow,
    stop() {
      clearInterval(timer);
      if (db.isOpen) db.close();
    },
  };
}
