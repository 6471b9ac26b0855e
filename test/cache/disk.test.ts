import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Entry, encodeEntry, openDiskCache } from '../../src/cache/index.ts';
import { JOURNAL_NAME } from '../../src/cache/journal.ts';
import { silentLogger } from '../../src/log.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-cache-'));
  dirs.push(dir);
  return dir;
}
function entry(bytes: number, createdAt = Date.now()): Entry {
  return {
    audio: randomBytes(bytes),
    meta: {
      format: 'opus',
      contentType: 'audio/ogg',
      sampleRate: 24_000,
      durationS: 1,
      characters: 10,
      costUsd: 0.001,
      createdAt,
    },
  };
}
/** Bytes of every file in the folder but its journal (at most JOURNAL_MAX_BYTES besides), as the disk sees it. */
function onDisk(dir: string): number {
  // A temporary file may be renamed between the listing and the stat; its bytes are then under the new name.
  return without(readdirSync(dir), JOURNAL_NAME).reduce(
    (sum, name) => sum + (statSync(join(dir, name), { throwIfNoEntry: false })?.size ?? 0),
    0,
  );
}
const without = (names: string[], name: string) => names.filter((other) => other !== name);
const fileSize = (e: Entry) => encodeEntry(e.meta, e.audio).length;
const DAY = 86_400_000;

describe('the disk cache', () => {
  it('gives back exactly what was stored, and nothing for an unknown key', async () => {
    const disk = await openDiskCache({ dir: folder(), maxBytes: 1e6, maxAgeMs: DAY, logger: silentLogger });
    const stored = entry(1_000);
    expect(await disk.put('k1', stored)).toBe('stored');
    const found = await disk.get('k1');
    expect(found.kind === 'hit' && found.entry.audio.equals(stored.audio)).toBe(true);
    expect(await disk.get('k2')).toEqual({ kind: 'miss' });
  });

  it('evicts the least recently used, never holding more than the bound on disk', async () => {
    const dir = folder();
    const one = entry(1_000);
    const bound = fileSize(one) * 3 + 10;
    let evicted = 0;
    const disk = await openDiskCache({
      dir,
      maxBytes: bound,
      maxAgeMs: DAY,
      logger: silentLogger,
      onEvicted: (entries) => {
        evicted += entries;
      },
    });
    await disk.put('a', entry(1_000));
    await disk.put('b', entry(1_000));
    await disk.put('c', entry(1_000));
    expect(evicted).toBe(0);
    expect((await disk.get('a')).kind).toBe('hit'); // a is now the most recent; b the least
    await disk.put('d', entry(1_000));
    expect(evicted).toBe(1);
    expect((await disk.get('b')).kind).toBe('miss');
    expect((await disk.get('a')).kind).toBe('hit');
    expect((await disk.get('c')).kind).toBe('hit');
    expect((await disk.get('d')).kind).toBe('hit');
    expect(onDisk(dir)).toBeLessThanOrEqual(bound);

    // Many concurrent writes of different sizes: the folder never grows past the bound.
    const sizes = Array.from({ length: 40 }, (_, i) => 200 + ((i * 397) % 900));
    let largest = 0;
    let stored = 4;
    await Promise.all(
      sizes.map(async (size, i) => {
        if ((await disk.put(`x${i}`, entry(size))) === 'stored') stored += 1;
        largest = Math.max(largest, onDisk(dir));
      }),
    );
    expect(largest).toBeLessThanOrEqual(bound);
    expect(disk.bytes).toBeLessThanOrEqual(bound);
    expect(onDisk(dir)).toBe(disk.bytes);
    // Every entry stored and no longer held was evicted, and reported.
    expect(evicted).toBe(stored - disk.size);
  });

  it('stores a burst asked at once together: each told its outcome, the least recently used evicted, the bound kept, and another process on the folder counting every entry', async () => {
    const dir = folder();
    const bound = fileSize(entry(1_000)) * 5 + 10;
    const options = { dir, maxBytes: bound, maxAgeMs: DAY, logger: silentLogger };
    const disk = await openDiskCache(options);
    const other = await openDiskCache(options);
    // Each has stored once, so each reads the folder's journal from here on (not a listing of the folder).
    expect(await disk.put('old1', entry(1_000))).toBe('stored');
    expect(await other.put('old2', entry(1_000))).toBe('stored');
    expect(await disk.put('old3', entry(1_000))).toBe('stored');
    // Asked while the first of them holds the store lock: the rest go together under the next hold.
    const burst = ['n1', 'n2', 'n3', 'n4'];
    const outcomes = await Promise.all([
      ...burst.map((key) => disk.put(key, entry(1_000))),
      disk.put('huge', entry(bound)),
    ]);
    expect(outcomes).toEqual(['stored', 'stored', 'stored', 'stored', 'too-large']);
    for (const key of burst) expect((await disk.get(key)).kind).toBe('hit');
    expect((await disk.get('old1')).kind).toBe('miss');
    expect((await disk.get('old2')).kind).toBe('miss');
    expect((await disk.get('old3')).kind).toBe('hit');
    expect(onDisk(dir)).toBeLessThanOrEqual(bound);
    expect(disk.bytes).toBe(onDisk(dir));
    // The other process learns the burst and its evictions from the folder's journal at its next store.
    expect(await other.put('later', entry(1_000))).toBe('stored');
    expect(other.bytes).toBe(onDisk(dir));
    expect(other.size).toBe(5);
    expect(onDisk(dir)).toBeLessThanOrEqual(bound);
  });

  it('refuses an entry larger than the whole cache', async () => {
    const disk = await openDiskCache({ dir: folder(), maxBytes: 500, maxAgeMs: DAY, logger: silentLogger });
    expect(await disk.put('big', entry(1_000))).toBe('too-large');
    expect(disk.size).toBe(0);
  });

  it('deletes a truncated file instead of returning it', async () => {
    const dir = folder();
    const disk = await openDiskCache({ dir, maxBytes: 1e6, maxAgeMs: DAY, logger: silentLogger });
    await disk.put('k', entry(2_000));
    const [name] = without(readdirSync(dir), JOURNAL_NAME);
    truncateSync(join(dir, name ?? ''), 1_200);
    expect(await disk.get('k')).toEqual({ kind: 'corrupt' });
    expect(without(readdirSync(dir), JOURNAL_NAME)).toEqual([]);
    expect(disk.bytes).toBe(0);
  });

  it('keeps entries across a restart, dropping leftover temporary files and expired entries', async () => {
    const dir = folder();
    let now = 10 * DAY;
    const first = await openDiskCache({
      dir,
      maxBytes: 1e6,
      maxAgeMs: DAY,
      logger: silentLogger,
      now: () => now,
    });
    await first.put('old', entry(100, now));
    now += DAY / 2;
    await first.put('new', entry(100, now));
    writeFileSync(join(dir, 'new.abc.tmp'), 'half a write');
    const crashed = (Date.now() - 3 * 60_000) / 1000;
    utimesSync(join(dir, 'new.abc.tmp'), crashed, crashed);
    // Another live process's write in progress: young, so left alone.
    writeFileSync(join(dir, 'other.def.tmp'), 'being written');
    now += DAY / 2 + 1000;
    const second = await openDiskCache({
      dir,
      maxBytes: 1e6,
      maxAgeMs: DAY,
      logger: silentLogger,
      now: () => now,
    });
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual(['other.def.tmp']);
    expect((await second.get('new')).kind).toBe('hit');
    expect(await second.get('old')).toEqual({ kind: 'miss' });
  });
});
