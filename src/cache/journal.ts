import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, openSync, readSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { removeQuietly } from './folder-lock.ts';

/**
 * The cache folder's journal: each store appends the entries it added and evicted, so every other process on the
 * folder learns what changed by reading only the lines it has not read yet, instead of listing the whole folder on
 * each store (a listing of 20,000 entries cost ~16 ms of CPU, for every cache miss of a full cache). It is written
 * and read only under the folder's store lock.
 *
 * It is a hint, never the truth: a process that cannot be sure it saw every change since its last read (the
 * journal was started afresh, damaged by a crash mid-line, or removed) is told to list the folder, once. A crash
 * between a line and the change it names can only make the others over-count (an entry is journaled before its
 * rename, an eviction after its unlink), which keeps the bound.
 */

/** The journal's file name in the cache folder: no entry, temporary file or lock ends like it. */
export const JOURNAL_NAME = 'entries.journal';
/** Past this size a store starts the journal afresh; each other process then lists the folder once. */
export const JOURNAL_MAX_BYTES = 64 * 1024;

/** An entry stored (with its file's size) or evicted. */
export type JournalChange =
  | { readonly key: string; readonly bytes: number }
  | { readonly key: string; readonly bytes?: undefined };

/** Where this process stands in the journal. */
export interface Journal {
  /**
   * The changes appended since this process last read or wrote, or `'list'` when it must list the folder
   * instead. Called under the store lock.
   */
  readNew(): readonly JournalChange[] | 'list';
  /** Appends `changes` (under the store lock); starts the journal afresh when it has grown past its bound. */
  append(changes: readonly JournalChange[]): void;
}

interface Position {
  /** The journal file's identity (inode and birth time: an inode number is reused), or null while there is none. */
  readonly file: string | null;
  readonly offset: number;
}

const positionOf = (path: string): Position => {
  const info = statSync(path, { throwIfNoEntry: false });
  return info ? { file: `${info.ino}@${info.birthtimeMs}`, offset: info.size } : { file: null, offset: 0 };
};

/**
 * Opens the journal of `dir` at its current end: call it before listing the folder, so that a change made between
 * the two is read again (applying a change twice is harmless) rather than missed. A fresh journal is written under a
 * name ending in `tempSuffix` first (the folder's temporary files, which opening the folder clears after a crash).
 * Its calls are made in place, as the folder's locks are (see folder-lock.ts): a stat, and a read or an append of a
 * few hundred bytes.
 */
export function openJournal(dir: string, tempSuffix: string): Journal {
  const path = join(dir, JOURNAL_NAME);
  let position = positionOf(path);
  // A line cut short (a crash mid-append) damages every line after it: the next append starts afresh.
  let damaged = false;

  const restart = (): void => {
    const temp = join(dir, `${JOURNAL_NAME}.${randomBytes(6).toString('hex')}${tempSuffix}`);
    closeSync(openSync(temp, 'wx', 0o600));
    try {
      renameSync(temp, path);
    } catch (error) {
      removeQuietly(temp);
      throw error;
    }
    damaged = false;
    position = positionOf(path);
  };

  return {
    readNew() {
      const now = positionOf(path);
      if (now.file !== position.file || now.offset < position.offset) {
        position = now;
        return 'list';
      }
      if (now.offset === position.offset) return [];
      const fd = openSync(path, 'r');
      let text: string;
      try {
        const length = now.offset - position.offset;
        const buffer = Buffer.alloc(length);
        const bytesRead = readSync(fd, buffer, 0, length, position.offset);
        text = buffer.toString('utf8', 0, bytesRead);
        position = { file: now.file, offset: position.offset + bytesRead };
      } finally {
        closeSync(fd);
      }
      const changes = parseLines(text);
      if (changes === undefined) {
        damaged = true;
        return 'list';
      }
      return changes;
    },

    append(changes) {
      if (damaged || position.offset >= JOURNAL_MAX_BYTES) restart();
      if (changes.length === 0) return;
      const text = changes
        .map(
          (change) =>
            `${JSON.stringify(change.bytes === undefined ? [change.key] : [change.key, change.bytes])}\n`,
        )
        .join('');
      appendFileSync(path, text, { mode: 0o600 });
      // Read back to the new end: under the store lock nobody else appended meanwhile.
      position = positionOf(path);
    },
  };
}

/** The changes in `text` (whole lines), or undefined when a line is not one this file writes. */
function parseLines(text: string): JournalChange[] | undefined {
  if (!text.endsWith('\n')) return undefined;
  const changes: JournalChange[] = [];
  for (const line of text.slice(0, -1).split('\n')) {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return undefined;
    }
    if (!Array.isArray(value) || typeof value[0] !== 'string') return undefined;
    if (value.length === 1) changes.push({ key: value[0] });
    else if (value.length === 2 && Number.isSafeInteger(value[1]) && value[1] >= 0)
      changes.push({ key: value[0], bytes: value[1] });
    else return undefined;
  }
  return changes;
}
