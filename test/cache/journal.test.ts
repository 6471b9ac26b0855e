import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Entry, encodeEntry, openDiskCache } from '../../src/cache/index.ts';
import { JOURNAL_MAX_BYTES, JOURNAL_NAME, openJournal } from '../../src/cache/journal.ts';
import { silentLogger } from '../../src/log.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-journal-'));
  dirs.push(dir);
  return dir;
}
function entry(bytes: number): Entry {
  return {
    audio: Buffer.alloc(bytes, 7),
    meta: {
      contentType: 'audio/ogg',
      format: 'opus',
      sampleRate: 48_000,
      characters: 20,
      durationS: 1,
      costUsd: 0.01,
      createdAt: Date.now(),
    },
  };
}
const open = (dir: string, maxBytes = 1e6) =>
  openDiskCache({ dir, maxBytes, maxAgeMs: 86_400_000, logger: silentLogger });

describe('the cache folder journal', () => {
  it('gives each reader the changes appended since it last read, once', async () => {
    const dir = folder();
    const [a, b] = [await openJournal(dir, '.tmp'), await openJournal(dir, '.tmp')];
    // b had no journal when it opened: the first one a writes is a file it never saw, so it lists the folder.
    await a.append([{ key: 'one', bytes: 10 }]);
    expect(await b.readNew()).toBe('list');
    await a.append([{ key: 'two', bytes: 20 }, { key: 'one' }]);
    expect(await b.readNew()).toEqual([{ key: 'two', bytes: 20 }, { key: 'one' }]);
    expect(await b.readNew()).toEqual([]);
    // What a process wrote itself is not read back to it.
    await b.append([{ key: 'three', bytes: 30 }]);
    expect(await b.readNew()).toEqual([]);
    expect(await a.readNew()).toEqual([{ key: 'three', bytes: 30 }]);
  });

  it('starts afresh past its bound, and every other reader then lists the folder once', async () => {
    const dir = folder();
    const [a, b] = [await openJournal(dir, '.tmp'), await openJournal(dir, '.tmp')];
    await a.append([{ key: 'k', bytes: 1 }]);
    expect(await b.readNew()).toBe('list');
    const key = 'x'.repeat(64);
    while (statSync(join(dir, JOURNAL_NAME)).size < JOURNAL_MAX_BYTES) await a.append([{ key, bytes: 1 }]);
    expect(await b.readNew()).not.toBe('list');
    await a.append([{ key: 'after', bytes: 2 }]);
    expect(statSync(join(dir, JOURNAL_NAME)).size).toBeLessThan(100);
    expect(await b.readNew()).toBe('list');
    await a.append([{ key: 'next', bytes: 3 }]);
    expect(await b.readNew()).toEqual([{ key: 'next', bytes: 3 }]);
    // No temporary file is left behind by starting afresh.
    expect(readdirSync(dir)).toEqual([JOURNAL_NAME]);
  });

  it('has the folder listed when a line was cut short (a crash mid-append), then starts afresh', async () => {
    const dir = folder();
    const [a, b] = [await openJournal(dir, '.tmp'), await openJournal(dir, '.tmp')];
    await a.append([{ key: 'k', bytes: 1 }]);
    expect(await b.readNew()).toBe('list');
    appendFileSync(join(dir, JOURNAL_NAME), '["half'); // the crash
    await a.append([{ key: 'k2', bytes: 2 }]);
    expect(await b.readNew()).toBe('list');
    // b saw the damage: its next append starts a fresh journal, which a then lists once and reads after.
    await b.append([{ key: 'k3', bytes: 3 }]);
    expect(await a.readNew()).toBe('list');
    await b.append([{ key: 'k4', bytes: 4 }]);
    expect(await a.readNew()).toEqual([{ key: 'k4', bytes: 4 }]);
  });

  it('lets a store learn what other processes stored and evicted from the journal, not from listing the folder', async () => {
    const dir = folder();
    const size = encodeEntry(entry(1_000).meta, entry(1_000).audio).length;
    const [a, b] = [await open(dir, size * 3 + 10), await open(dir, size * 3 + 10)];
    await a.put('one', entry(1_000));
    await b.put('two', entry(1_000)); // b lists the folder once: the journal a started is new to it
    await a.put('three', entry(1_000));
    // A file nobody journaled (as if copied in by hand): a store that listed the folder would count it.
    writeFileSync(join(dir, 'stray.hac'), Buffer.alloc(size));
    const entries = () => readdirSync(dir).filter((name) => name.endsWith('.hac') && name !== 'stray.hac');
    await b.put('four', entry(1_000)); // evicts 'one' alone, the least recently used, which a stored
    expect(entries().sort()).toEqual(['four.hac', 'three.hac', 'two.hac']);
    expect([b.size, b.bytes]).toEqual([3, size * 3]);
    await a.put('five', entry(1_000)); // a learns of 'four' and of the eviction of 'one' from the journal
    expect(entries().sort()).toEqual(['five.hac', 'four.hac', 'three.hac']);
    expect([a.size, a.bytes]).toEqual([3, size * 3]);
  });
});
