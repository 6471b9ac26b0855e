/**
 * Benchmark: what one store into a full audio cache costs, with the folder shared by several processes. Fills a
 * folder with ENTRIES entries (as a 256 MB cache of short sentences holds, ~20,000), opens it from PROCESSES disk
 * caches (each as a Herald process opens it; the journal and the locks are files, so one Node process shows the same
 * work), and has them store STORES new entries, each evicting the least recently used: in turn, and as a rush's misses
 * come (all asked at once, spread over the caches). The CPU and the wall time per store, side by side: as Herald
 * stores (the folder's journal; stores asked meanwhile made together under one hold of the store lock; files not
 * synced), one by one with each file synced (as before), and listing the folder on every store (as before the
 * journal). Run: `npm run bench:cache-store` (ENTRIES=…, STORES=…); writes bench/results/cache-store-….json.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DiskCache, type Entry, encodeEntry, openDiskCache } from '../src/cache/index.ts';
import { silentLogger } from '../src/log.ts';
import { cpuMsSince, median } from './cpu-time.ts';
import { machineOf, writeResult } from './result-file.ts';

const ENTRIES = Number(process.env.ENTRIES ?? 20_000);
const STORES = Number(process.env.STORES ?? 400);
const PROCESSES = 4;
/** About 2 s of speech: the short sentences a cache pays off for. */
const AUDIO_BYTES = 8_000;
const ROUNDS = 3;

const entry = (): Entry => ({
  audio: Buffer.alloc(AUDIO_BYTES, 1),
  meta: {
    contentType: 'audio/ogg',
    format: 'opus',
    sampleRate: 48_000,
    characters: 20,
    durationS: 1,
    costUsd: 0.001,
    createdAt: Date.now(),
  },
});
const fileBytes = encodeEntry(entry().meta, entry().audio).length;

/** How a round stores. */
interface Way {
  /** All asked at once (a rush), rather than each after the one before. */
  readonly burst: boolean;
  readonly listOnEveryStore: boolean;
  readonly storeOneByOne: boolean;
}

/** Per store, the CPU ms and wall ms of one round in a freshly filled folder. */
async function round(way: Way): Promise<{ cpuMs: number; wallMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'herald-cache-store-'));
  try {
    const file = encodeEntry(entry().meta, entry().audio);
    for (let i = 0; i < ENTRIES; i++) writeFileSync(join(dir, `filled-${i}.hac`), file);
    const options = {
      dir,
      maxBytes: fileBytes * ENTRIES,
      maxAgeMs: 86_400_000,
      logger: silentLogger,
      listOnEveryStore: way.listOnEveryStore,
      storeOneByOne: way.storeOneByOne,
    };
    const caches: DiskCache[] = [];
    for (let i = 0; i < PROCESSES; i++) caches.push(await openDiskCache(options));
    // Each has stored once: from here on, the journal is one each has read (as in a process that has run a while).
    for (const [i, cache] of caches.entries()) await cache.put(`warm-${i}`, entry());
    const cpu = process.cpuUsage();
    const started = performance.now();
    const store = async (i: number): Promise<void> => {
      const outcome = await caches[i % PROCESSES]?.put(`new-${i}`, entry());
      if (outcome !== 'stored') throw new Error(`store ${i}: ${outcome}`);
    };
    if (way.burst) await Promise.all(Array.from({ length: STORES }, (_, i) => store(i)));
    else for (let i = 0; i < STORES; i++) await store(i);
    return { cpuMs: cpuMsSince(cpu) / STORES, wallMs: (performance.now() - started) / STORES };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const machine = machineOf();
const startedAt = new Date().toISOString();
console.log(
  `${ENTRIES} entries in the folder, ${PROCESSES} caches on it, ${STORES} stores each evicting one; ${JSON.stringify(machine)}`,
);
const figures: Record<string, { cpuMsPerStore: number; wallMsPerStore: number }> = {};
const ways: Record<string, Way> = {
  'in turn, as Herald stores': { burst: false, listOnEveryStore: false, storeOneByOne: false },
  'in turn, one by one, synced': { burst: false, listOnEveryStore: false, storeOneByOne: true },
  'in turn, listing the folder': { burst: false, listOnEveryStore: true, storeOneByOne: true },
  'at once, as Herald stores': { burst: true, listOnEveryStore: false, storeOneByOne: false },
  'at once, one by one, synced': { burst: true, listOnEveryStore: false, storeOneByOne: true },
};
for (const [name, way] of Object.entries(ways)) {
  const rounds: { cpuMs: number; wallMs: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) rounds.push(await round(way));
  figures[name] = {
    cpuMsPerStore: median(
      rounds.map((one) => one.cpuMs),
      3,
    ),
    wallMsPerStore: median(
      rounds.map((one) => one.wallMs),
      3,
    ),
  };
  console.log(
    `${name.padEnd(28)} CPU ${figures[name].cpuMsPerStore} ms per store, wall ${figures[name].wallMsPerStore} ms (median of ${ROUNDS} rounds)`,
  );
}
const file = writeResult('cache-store', startedAt, machine, {
  entries: ENTRIES,
  stores: STORES,
  processes: PROCESSES,
  figures,
});
console.log(`written to ${file}`);
