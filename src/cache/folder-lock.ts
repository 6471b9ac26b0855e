import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Locks between the processes of one machine that share the cache folder: a file created exclusively (`wx`, so
 * exactly one creator wins), holding its owner's pid and host. A lock is stale, and may be broken, when its owner
 * on this host is no longer running (a crash, `kill -9`), or when it is older than {@link MAX_LOCK_AGE_MS} (an
 * owner on another host sharing the folder, or a pid reused after a crash).
 *
 * Every call here is a system call made in place (synchronous): a create, a write of a few dozen bytes, a stat, an
 * unlink on a local folder each take microseconds, where the same call through `node:fs/promises` costs five times
 * the CPU (a thread-pool round trip, a promise, an error object for every `ENOENT`), and a rush makes thousands of
 * them (docs/rush.md, "The cache's file calls").
 */

/** No cached clip takes this long to generate; a lock older than this is a leftover. */
export const MAX_LOCK_AGE_MS = 120_000;
/** A lock file's name: the thing locked and this. */
export const LOCK_SUFFIX = '.lock';

interface Owner {
  readonly pid: number;
  readonly host: string;
}

/** Takes the lock at `path`: a release function, or undefined when another live owner holds it. */
export function tryLock(path: string): (() => void) | undefined {
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (!isFreeOrStale(path)) return undefined;
      // A dead owner's lock: broken once, then taken like a free one (another breaker may win the create).
      removeQuietly(path);
      continue;
    }
    try {
      writeSync(fd, ownerText());
    } catch (error) {
      // An empty lock would read as young and alive for MAX_LOCK_AGE_MS.
      removeQuietly(path);
      throw error;
    } finally {
      closeSync(fd);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      removeQuietly(path);
    };
  }
  return undefined;
}

/** True when the lock at `path` is gone or stale (see the module's comment). */
export function isFreeOrStale(path: string, now = Date.now()): boolean {
  let text: string;
  const info = statSync(path, { throwIfNoEntry: false });
  if (!info) return true;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return true;
  }
  if (now - info.mtimeMs > MAX_LOCK_AGE_MS) return true;
  let owner: Partial<Owner>;
  try {
    owner = JSON.parse(text) as Partial<Owner>;
  } catch {
    // Created but not yet written (its owner is between `open` and `write`): young, so alive.
    return false;
  }
  if (owner.host !== hostname() || typeof owner.pid !== 'number') return false;
  return !isRunning(owner.pid);
}

/** Deletes `path`; already gone is as good. */
export function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Gone already, or the folder is: either way nothing is held.
  }
}

let owner: string | undefined;
/** This process's lock contents. */
const ownerText = (): string => {
  owner ??= JSON.stringify({ pid: process.pid, host: hostname() } satisfies Owner);
  return owner;
};

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
