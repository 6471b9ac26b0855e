import { describe, expect, it } from 'vitest';
import {
  createIdentifySlots,
  createSharedIdentifyThrottler,
  type IdentifySlot,
  type IdentifySlots,
  identifyThrottlerOptions,
  sharesIdentifyBuckets,
} from '../../src/gateway/index.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import type { ShardConfig } from '../../src/shard/config.ts';
import { type Database, openDatabase } from '../../src/storage/index.ts';
import { describeEachBackend } from '../support/databases.ts';

/** Short enough for a test to wait out; production's is 5.5 s. */
const WINDOW = 300;

interface Claimed {
  readonly shard: number;
  readonly host: string;
  readonly at: number;
}

/** Slots that record every outcome, with the database's time of each slot taken. */
function recording(
  slots: IdentifySlots,
  claimed: Claimed[],
  outcomes: IdentifySlot['kind'][] = [],
): IdentifySlots {
  return {
    async claim(bucket, claimant) {
      const slot = await slots.claim(bucket, claimant);
      outcomes.push(slot.kind);
      if (slot.kind === 'claimed')
        claimed.push({ shard: claimant.shardId, host: claimant.host, at: slot.at });
      return slot;
    },
  };
}

/** A process (its own connection to the database) on `host`, with `maxConcurrency` buckets. */
function processOn(
  db: Database,
  host: string,
  claimed: Claimed[],
  o: {
    readonly maxConcurrency?: number;
    readonly windowMs?: number;
    readonly outcomes?: IdentifySlot['kind'][];
  } = {},
) {
  const slots = recording(createIdentifySlots(db, { windowMs: o.windowMs ?? WINDOW }), claimed, o.outcomes);
  return createSharedIdentifyThrottler(slots, {
    maxConcurrency: o.maxConcurrency ?? 1,
    logger: silentLogger,
    host,
    pid: 1,
  });
}

/** The database time between the slots the `later` and `earlier` claims took (by index in `claimed`). */
function gap(claimed: readonly Claimed[], earlier: number, later: number): number {
  const [a, b] = [claimed[earlier], claimed[later]];
  if (a === undefined || b === undefined)
    throw new Error(`claims ${earlier} and ${later} were not both taken`);
  return b.at - a.at;
}

/** The index of shard `shard`'s claim. */
const of = (claimed: readonly Claimed[], shard: number): number =>
  claimed.findIndex((c) => c.shard === shard);

const live = (): AbortSignal => new AbortController().signal;

describeEachBackend('identify slots shared through the database', (backend) => {
  it('two processes, one bucket: the second identifies a whole window (database time) after the first', async () => {
    const target = await backend.fresh();
    const claimed: Claimed[] = [];
    const a = processOn(target.open(), 'machine-a', claimed);
    const b = processOn(target.open(), 'machine-b', claimed);
    await Promise.all([a.waitForIdentify(0, live()), b.waitForIdentify(2, live())]);
    expect(claimed.map((c) => c.shard).sort()).toEqual([0, 2]);
    expect(gap(claimed, 0, 1)).toBeGreaterThanOrEqual(WINDOW);
  });

  it('buckets are shard_id % max_concurrency: other buckets do not wait, the same bucket does', async () => {
    const target = await backend.fresh();
    const claimed: Claimed[] = [];
    const outcomes: IdentifySlot['kind'][] = [];
    const a = processOn(target.open(), 'machine-a', claimed, { maxConcurrency: 2, outcomes });
    const b = processOn(target.open(), 'machine-b', claimed, { maxConcurrency: 2, outcomes });
    await Promise.all([a.waitForIdentify(0, live()), b.waitForIdentify(1, live())]);
    expect(outcomes).toEqual(['claimed', 'claimed']);
    // Shard 2 is in shard 0's bucket (2 % 2), shard 3 in shard 1's.
    await Promise.all([a.waitForIdentify(2, live()), b.waitForIdentify(3, live())]);
    expect(outcomes.slice(2)).toContain('wait');
    expect(gap(claimed, of(claimed, 0), of(claimed, 2))).toBeGreaterThanOrEqual(WINDOW);
    expect(gap(claimed, of(claimed, 1), of(claimed, 3))).toBeGreaterThanOrEqual(WINDOW);
  });

  it('an abort while waiting rejects at once and takes no slot', async () => {
    const target = await backend.fresh();
    const claimed: Claimed[] = [];
    // A minute's window: only the abort can end this wait within the test's time.
    const a = processOn(target.open(), 'machine-a', claimed, { windowMs: 60_000 });
    const b = processOn(target.open(), 'machine-b', claimed, { windowMs: 60_000 });
    await a.waitForIdentify(0, live());
    const controller = new AbortController();
    const waiting = b.waitForIdentify(0, controller.signal);
    const outcome = expect(waiting).rejects.toThrow(/abort/i);
    setTimeout(() => controller.abort(), 50);
    await outcome;
    // Aborted before it asks: it asks nothing.
    await expect(b.waitForIdentify(1, AbortSignal.abort())).rejects.toThrow(/abort/i);
    expect(claimed.map((c) => c.shard)).toEqual([0]);
  });

  it('a holder that crashed right after its slot costs the next one the window, no more', async () => {
    const target = await backend.fresh();
    const claimed: Claimed[] = [];
    const crashed = target.open();
    await processOn(crashed, 'machine-a', claimed).waitForIdentify(0, live());
    await crashed.close();
    await processOn(target.open(), 'machine-b', claimed).waitForIdentify(0, live());
    expect(claimed.map((c) => c.host)).toEqual(['machine-a', 'machine-b']);
    expect(gap(claimed, 0, 1)).toBeGreaterThanOrEqual(WINDOW);
  });

  it('a slot set further ahead than one window (a clock set back) holds nobody up', async () => {
    const target = await backend.fresh();
    const db = target.open();
    const slots = createIdentifySlots(db, { windowMs: WINDOW });
    const claimant = { shardId: 0, host: 'machine-a', pid: 1 };
    expect(await slots.claim(0, claimant)).toMatchObject({ kind: 'claimed' });
    expect(await slots.claim(0, { ...claimant, shardId: 2 })).toMatchObject({ kind: 'wait', last: claimant });
    await db.run('UPDATE identify_slots SET next_at = next_at + 3600000');
    expect(await slots.claim(0, claimant)).toMatchObject({ kind: 'claimed' });
  });
});

describe('the shared throttler without a database that answers', () => {
  it('asks again while the database fails, says so once, and identifies once it answers', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'info', write: (line) => lines.push(JSON.parse(line)) });
    let failures = 3;
    const slots: IdentifySlots = {
      async claim() {
        if (failures > 0) {
          failures -= 1;
          throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
        }
        return { kind: 'claimed', at: 0 };
      },
    };
    const throttler = createSharedIdentifyThrottler(slots, { maxConcurrency: 1, logger, retryMs: 5 });
    await throttler.waitForIdentify(3, live());
    expect(failures).toBe(0);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', expect.stringMatching(/did not give an identify slot/)],
      ['info', 'the database gives identify slots again'],
    ]);
    expect(lines[0]).toMatchObject({ shard: 3, bucket: 0 });
  });
});

describe('which processes share identify buckets', () => {
  const cases: [string, ShardConfig, boolean][] = [
    ['one process, unsharded', { count: 1, ids: [0], managed: false }, false],
    ['one process with every shard of 4', { count: 4, ids: undefined, managed: false }, false],
    ['one process with SHARD_COUNT=auto', { count: 'auto', ids: undefined, managed: false }, false],
    ['a managed shard', { count: 4, ids: [2], managed: true }, true],
    ['SHARD_IDS=0-1 of 4', { count: 4, ids: [0, 1], managed: false }, true],
  ];
  it.each(cases)('%s', (_name, shards, shared) => {
    expect(sharesIdentifyBuckets(shards)).toBe(shared);
  });

  it('a shared throttler takes its buckets from Discord’s max_concurrency; one process keeps discord.js’s own', async () => {
    const db = openDatabase({ kind: 'sqlite', path: ':memory:' });
    const deps = { db, logger: silentLogger };
    try {
      expect(identifyThrottlerOptions({ count: 1, ids: [0], managed: false }, deps)).toEqual({});
      const option = identifyThrottlerOptions({ count: 4, ids: [1, 2], managed: false }, deps);
      const throttler = await option.buildIdentifyThrottler?.({
        fetchGatewayInformation: async () => ({ session_start_limit: { max_concurrency: 2 } }),
      });
      await throttler?.waitForIdentify(1, live());
      await throttler?.waitForIdentify(2, live());
      // Two buckets: shard 1 in bucket 1, shard 2 in bucket 0 (with max_concurrency 1, both would be in bucket 0).
      expect(await db.all('SELECT bucket, shard_id FROM identify_slots ORDER BY bucket')).toEqual([
        { bucket: 0, shard_id: 2 },
        { bucket: 1, shard_id: 1 },
      ]);
    } finally {
      await db.close();
    }
  });
});
