import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, renameSync, utimesSync, writevSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import { decodeEntry, type Entry, encodeEntryHead } from './entry-file.ts';
import { isFreeOrStale, LOCK_SUFFIX, MAX_LOCK_AGE_MS, removeQuietly, tryLock } from './folder-lock.ts';
import { type JournalChange, openJournal } from './journal.ts';

/** Options of {@link openDiskCache}. */
export interface DiskCacheOptions {
  /** The folder; created when missing. Nothing else should live in it. */
  readonly dir: string;
  /**
   * The entries together never exceed this many bytes (files being written included); the folder's journal takes at
   * most JOURNAL_MAX_BYTES (64 KiB) besides.
   */
  readonly maxBytes: number;
  /** Entries created longer ago than this are deleted instead of played. */
  readonly maxAgeMs: number;
  readonly logger: Logger;
  /** Clock in ms; `Date.now` by default. */
  readonly now?: () => number;
  /** Told how many entries were evicted (least recently used first) to make room for a new one. */
  readonly onEvicted?: (entries: number) => void;
  /**
   * A diagnostic for `npm run bench:cache-store`: every store lists the folder, as before the journal, rather than
   * reading what the journal says changed.
   */
  readonly listOnEveryStore?: boolean;
  /**
   * A diagnostic for `npm run bench:cache-store`: stores as before batching, each taking the store lock alone and
   * syncing its file to disk before the rename.
   */
  readonly storeOneByOne?: boolean;
}

/**
 * What {@link DiskCache.get} found: the verified entry; nothing usable (never stored, evicted, expired, still being
 * written); or a damaged file, which was deleted.
 */
export type DiskLookup =
  | { readonly kind: 'hit'; readonly entry: Entry }
  | { readonly kind: 'miss' }
  | { readonly kind: 'corrupt' };

/** Outcome of {@link DiskCache.put}. */
export type PutOutcome = 'stored' | 'too-large' | 'no-room' | 'failed';

/** Verified audio files on disk, named by key, evicted least recently used first. */
export interface DiskCache {
  /**
   * Claims the generation of `key` among every process on this folder: a release function, or undefined while
   * another live process holds the claim (see folder-lock.ts).
   */
  claim(key: string): (() => void) | undefined;
  /** True while another live process holds the claim on `key`. */
  claimed(key: string): boolean;
  /** The verified entry, or why there is none; a damaged file is deleted. */
  get(key: string): Promise<DiskLookup>;
  /**
   * Stores an entry atomically (a temporary file, then a rename), evicting the least recently used to make room.
   * Stores asked for while this process waits for the folder's store lock are made together under one hold of it.
   */
  put(key: string, entry: Entry): Promise<PutOutcome>;
  /**
   * Bytes the folder's entries (and files being written) take, as this process last saw the folder (at open, on
   * each store, and on each hit of another process's entry).
   */
  readonly bytes: number;
  /** Entries in the folder, seen as {@link bytes} is. */
  readonly size: number;
}

const MISS: DiskLookup = { kind: 'miss' };
/** An entry's file name: its key and this. */
export const SUFFIX = '.hac';
/** A write in progress (or one a crash cut short): its key, a random tag and this. */
export const TEMP_SUFFIX = '.tmp';

interface Known {
  readonly bytes: number;
  /** True while the file is being written: it cannot be evicted yet. */
  writing: boolean;
}

/** The lock every process on the folder takes to store: eviction and writing never overlap machine-wide. */
const STORE_LOCK = `store${LOCK_SUFFIX}`;
/** How often a store waiting for another process's store looks again. */
const STORE_LOCK_POLL_MS = 10;
/**
 * At most this many stores under one hold of the store lock: a rush's misses are stored together (one lock, one
 * read and one append of the journal for all of them), while the other processes' stores wait at most this many.
 */
const STORES_PER_HOLD = 32;

/** A store asked for and not yet made. */
interface PendingStore {
  readonly key: string;
  readonly entry: Entry;
  readonly done: (outcome: PutOutcome) => void;
  readonly fail: (error: unknown) => void;
}

/**
 * Opens the cache folder, which every Herald process on this machine shares: deletes leftovers (temporary files and
 * locks a crashed process left), indexes the entries by last use (file mtime, which a hit refreshes) and evicts down
 * to the bound and the age limit.
 */
export async function openDiskCache(options: DiskCacheOptions): Promise<DiskCache> {
  const { dir, maxBytes, maxAgeMs, logger } = options;
  const now = options.now ?? Date.now;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // A Map iterates in insertion order: re-inserting on every use keeps the least recently used first.
  const index = new Map<string, Known>();
  let total = 0;
  const pathOf = (key: string): string => join(dir, `${key}${SUFFIX}`);
  // Before the listing: a change another process makes meanwhile is then read again, never missed.
  const journal = openJournal(dir, TEMP_SUFFIX);

  const found: { key: string; bytes: number; usedAt: number }[] = [];
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    if (name.endsWith(TEMP_SUFFIX)) {
      // A write that never reached its rename (a crash): never a valid entry. A young one may be another live
      // process's write in progress.
      const info = await stat(path).catch(() => undefined);
      // The wall clock: an mtime is one.
      if (info && Date.now() - info.mtimeMs > MAX_LOCK_AGE_MS) await unlink(path).catch(() => {});
      continue;
    }
    if (name.endsWith(LOCK_SUFFIX)) {
      if (isFreeOrStale(path)) removeQuietly(path);
      continue;
    }
    if (!name.endsWith(SUFFIX)) continue;
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) continue;
    found.push({ key: name.slice(0, -SUFFIX.length), bytes: info.size, usedAt: info.mtimeMs });
  }
  found.sort((a, b) => a.usedAt - b.usedAt);
  for (const file of found) {
    if (now() - file.usedAt > maxAgeMs) {
      await unlink(pathOf(file.key)).catch(() => {});
      continue;
    }
    index.set(file.key, { bytes: file.bytes, writing: false });
    total += file.bytes;
  }

  const pending: PendingStore[] = [];
  let storing = false;

  const forget = (key: string): void => {
    const known = index.get(key);
    if (!known) return;
    index.delete(key);
    total -= known.bytes;
    removeQuietly(pathOf(key));
  };

  /**
   * Evicts the least recently used settled entries until `needed` more bytes fit: the keys evicted, or undefined
   * when they cannot fit.
   */
  const makeRoom = (needed: number): string[] | undefined => {
    const victims: string[] = [];
    let freed = 0;
    for (const [key, known] of index) {
      if (total - freed + needed <= maxBytes) break;
      if (known.writing) continue;
      victims.push(key);
      freed += known.bytes;
    }
    if (total - freed + needed > maxBytes) return undefined;
    for (const key of victims) {
      const known = index.get(key);
      if (!known) continue;
      index.delete(key);
      total -= known.bytes;
      removeQuietly(pathOf(key));
    }
    if (victims.length > 0) {
      logger.debug('audio cache evicted', { entries: victims.length, bytes: freed });
      options.onEvicted?.(victims.length);
    }
    return victims;
  };

  return {
    get bytes() {
      return total;
    },
    get size() {
      return index.size;
    },

    async get(key) {
      let known = index.get(key);
      if (known?.writing) return MISS;
      // Another process on the folder may have stored it: the file, not this index, says what is there. Most lookups
      // of a rush are misses: a stat in place tells, where a read through the thread pool would fail with ENOENT.
      const path = pathOf(key);
      const file = existsSync(path) ? await readFile(path).catch(() => undefined) : undefined;
      if (index.get(key) !== known) return MISS;
      if (file === undefined) {
        // Evicted by another process.
        if (known) {
          index.delete(key);
          total -= known.bytes;
        }
        return MISS;
      }
      if (!known) {
        known = { bytes: file.length, writing: false };
        index.set(key, known);
        total += file.length;
      }
      const entry = decodeEntry(file);
      if (!entry) {
        logger.warn('a damaged audio cache file was deleted; it will be generated again', {
          bytesOnDisk: file.length,
          bytesExpected: known.bytes,
        });
        forget(key);
        return { kind: 'corrupt' };
      }
      const at = now();
      if (at - entry.meta.createdAt > maxAgeMs) {
        forget(key);
        return MISS;
      }
      index.delete(key);
      index.set(key, known);
      // The mtime carries the last use across restarts; a failure only costs LRU precision.
      try {
        utimesSync(path, at / 1000, at / 1000);
      } catch {
        // Evicted meanwhile: the entry read is whole all the same.
      }
      return { kind: 'hit', entry };
    },

    put(key, entry) {
      // Stores happen under the folder's store lock, machine-wide: eviction and writing then never overlap, so the
      // folder never passes the bound, even for an instant. The ones asked for meanwhile wait and go together.
      return new Promise<PutOutcome>((done, fail) => {
        pending.push({ key, entry, done, fail });
        if (!storing) void drain();
      });
    },
    claim: (key) => tryLock(join(dir, `${key}${LOCK_SUFFIX}`)),
    claimed: (key) => !isFreeOrStale(join(dir, `${key}${LOCK_SUFFIX}`)),
  };

  /** Makes the pending stores, a hold of the store lock at a time, until none is left. */
  async function drain(): Promise<void> {
    storing = true;
    try {
      while (pending.length > 0) {
        const batch = pending.splice(0, options.storeOneByOne ? 1 : STORES_PER_HOLD);
        try {
          const outcomes = await storeLocked(batch);
          for (const [i, store] of batch.entries()) store.done(outcomes[i] ?? 'failed');
        } catch (error) {
          for (const store of batch) store.fail(error);
        }
      }
    } finally {
      storing = false;
    }
  }

  async function storeLocked(batch: readonly PendingStore[]): Promise<PutOutcome[]> {
    const lockPath = join(dir, STORE_LOCK);
    let release = tryLock(lockPath);
    // Another process's store takes milliseconds; a dead one's lock is broken by tryLock.
    for (let waited = 0; !release && waited < MAX_LOCK_AGE_MS; waited += STORE_LOCK_POLL_MS) {
      await delay(STORE_LOCK_POLL_MS);
      release = tryLock(lockPath);
    }
    if (!release) return batch.map(() => 'failed');
    try {
      // What the other processes stored and evicted since this one last looked: the journal's new lines, or, when
      // they cannot be trusted to be all of it, the folder itself.
      const changes = journal.readNew();
      if (changes === 'list' || options.listOnEveryStore) await resync();
      else catchUp(changes);
      return await writeAll(batch);
    } finally {
      release();
    }
  }

  /** Applies what the journal says other processes stored and evicted. */
  function catchUp(changes: readonly JournalChange[]): void {
    for (const change of changes) {
      const known = index.get(change.key);
      if (change.bytes === undefined) {
        if (!known || known.writing) continue;
        index.delete(change.key);
        total -= known.bytes;
      } else if (!known) {
        // Stored by another process since this one looked: recent, so last in the eviction order.
        index.set(change.key, { bytes: change.bytes, writing: false });
        total += change.bytes;
      }
    }
  }

  /** Brings the index up to the folder: entries other processes stored are added, those they evicted dropped. */
  async function resync(): Promise<void> {
    const names = new Set(
      (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith(SUFFIX)),
    );
    for (const [key, known] of index) {
      if (known.writing || names.has(`${key}${SUFFIX}`)) continue;
      index.delete(key);
      total -= known.bytes;
    }
    for (const name of names) {
      const key = name.slice(0, -SUFFIX.length);
      if (index.has(key)) continue;
      const info = await stat(join(dir, name)).catch(() => undefined);
      if (!info?.isFile() || index.has(key)) continue;
      // Stored by another process since this one looked: recent, so last in the eviction order.
      index.set(key, { bytes: info.size, writing: false });
      total += info.size;
    }
  }

  /**
   * Writes each entry of the batch to a temporary file (evicting to make room first), then journals the batch's
   * evictions and entries in one append, then renames the files into place: an entry is journaled before its
   * rename, an eviction after its unlink, so a crash between leaves the other processes counting a file that is not
   * there (which keeps the bound), never missing one that is.
   */
  async function writeAll(batch: readonly PendingStore[]): Promise<PutOutcome[]> {
    const outcomes: PutOutcome[] = [];
    const changes: JournalChange[] = [];
    const written: { key: string; known: Known; temp: string; at: number }[] = [];
    for (const { key, entry } of batch) {
      const head = encodeEntryHead(entry.meta, entry.audio);
      const bytes = head.length + entry.audio.length;
      if (bytes > maxBytes) {
        outcomes.push('too-large');
        continue;
      }
      // Already there: stored by another process while this one generated it too (a claim broken as stale), or
      // asked twice in this batch.
      if (index.has(key)) {
        outcomes.push('stored');
        continue;
      }
      const evicted = makeRoom(bytes);
      if (!evicted) {
        outcomes.push('no-room');
        continue;
      }
      changes.push(...evicted.map((victim) => ({ key: victim })));
      const known: Known = { bytes, writing: true };
      index.set(key, known);
      total += bytes;
      const temp = join(dir, `${key}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
      // One file a turn of the event loop: a batch of a rush's misses never holds the audio cycle of the streams
      // playing for longer than one write.
      if (written.length > 0) await new Promise((resolve) => setImmediate(resolve));
      if (writeTemp(temp, [head, entry.audio])) {
        written.push({ key, known, temp, at: outcomes.length });
        changes.push({ key, bytes });
        outcomes.push('stored');
      } else {
        forgetWriting(key, known);
        outcomes.push('failed');
      }
    }
    try {
      journal.append(changes);
    } catch (error) {
      // Not journaled: the other processes would not count these files, so they are not put in place.
      logger.warn('could not write the audio cache journal', { err: error });
      for (const file of written) {
        removeQuietly(file.temp);
        forgetWriting(file.key, file.known);
        outcomes[file.at] = 'failed';
      }
      return outcomes;
    }
    for (const file of written) {
      try {
        renameSync(file.temp, pathOf(file.key));
        file.known.writing = false;
      } catch (error) {
        logger.warn('could not write an audio cache file', { err: error });
        removeQuietly(file.temp);
        forgetWriting(file.key, file.known);
        outcomes[file.at] = 'failed';
      }
    }
    return outcomes;
  }

  /**
   * Writes a temporary file, in place (a clip of a few dozen KB into the kernel's page cache takes tens of
   * microseconds: see folder-lock.ts); false (the file removed, the failure logged) when it could not.
   */
  function writeTemp(temp: string, parts: readonly Buffer[]): boolean {
    try {
      const fd = openSync(temp, 'wx', 0o600);
      try {
        let left = parts.filter((part) => part.length > 0);
        while (left.length > 0) {
          // A file takes the whole write but for a full disk (which throws); a short one is written on from there.
          let written = writevSync(fd, left);
          const rest: Buffer[] = [];
          for (const part of left) {
            if (written >= part.length) written -= part.length;
            else {
              rest.push(part.subarray(written));
              written = 0;
            }
          }
          left = rest;
        }
        // Not synced by default: a read verifies every entry (its audio's SHA-256), so a file a power loss left
        // damaged is deleted and generated again; a crash of the process loses nothing the kernel was given.
        if (options.storeOneByOne) fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      return true;
    } catch (error) {
      logger.warn('could not write an audio cache file', { err: error });
      removeQuietly(temp);
      return false;
    }
  }

  /** Takes an entry that will not be stored after all out of the index. */
  function forgetWriting(key: string, known: Known): void {
    if (index.get(key) === known) {
      index.delete(key);
      total -= known.bytes;
    }
  }
}
