import { open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';

/**
 * Locks between the processes of one machine that share the cache folder: a file created exclusively (`wx`, so
 * exactly one creator wins), holding its owner's pid and host. A lock is stale, and may be broken, when its owner
 * on this host is no longer running (a crash, `kill -9`), or when it is older than {@link MAX_LOCK_AGE_MS} (an
 * owner on another host sharing the folder, or a pid reused after a crash).
 */

/** No cached clip takes this long to generate; a lock older than this is a leftover. */
export const MAX_LOCK_AGE_MS = 120_000;
/** A lock file's name: the thing locked and this. */
export const LOCK_SUFFIX = '.lock';

interface Owner {
  readonly pid: number;
  readonly host: string;
}

/** Takes the lock at `path`; a release function, or undefined when another live owner holds it. */
export async function tryLock(path: string): Promise<(() => Promise<void>) | undefined> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o600);
      try {
        await handle.writeFile(JSON.stringify({ pid: process.pid, host: hostname() } satisfies Owner));
      } finally {
        await handle.close();
      }
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        await unlink(path).catch(() => {});
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (!(await isFreeOrStale(path))) return undefined;
      // A dead owner's lock: broken once, then taken like a free one (another breaker may win the create).
      await unlink(path).catch(() => {});
    }
  }
  return undefined;
}

/** True when the lock at `path` is gone or stale (see the module's comment). */
export async function isFreeOrStale(path: string, now = Date.now()): Promise<boolean> {
  const [info, text] = await Promise.all([
    stat(path).catch(() => undefined),
    readFile(path, 'utf8').catch(() => undefined),
  ]);
  if (!info || text === undefined) return true;
  if (now - info.mtimeMs > MAX_LOCK_AGE_MS) return true;
  let owner: Partial<Owner>;
  try {
    owner = JSON.parse(text) as Partial<Owner>;
  } catch {
    // Created but not yet written (its owner is between `open` and `writeFile`): young, so alive.
    return false;
  }
  if (owner.host !== hostname() || typeof owner.pid !== 'number') return false;
  return !isRunning(owner.pid);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
