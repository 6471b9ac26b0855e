import { expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import {
  acquireShardLeases,
  createShardLeases,
  keepShardLeases,
  type ShardLeaseOptions,
} from '../../src/shard/lease.ts';
import type { Database } from '../../src/storage/index.ts';
import { describeEachBackend } from '../support/databases.ts';

const TTL = 30_000;

describeEachBackend('shard leases: one Herald per shard', (backend) => {
  let clock = 1_000_000;
  const alive = new Set<number>();
  /** A process of `host`/`pid` running `ids` of `count`, on the shared clock and process table. */
  const processOn = (db: Database, o: Partial<ShardLeaseOptions> & Pick<ShardLeaseOptions, 'pid'>) => {
    alive.add(o.pid);
    return createShardLeases(db, {
      count: 4,
      ids: [0, 1, 2, 3],
      host: 'machine-a',
      ttlMs: TTL,
      now: () => clock,
      isAlive: (pid) => alive.has(pid),
      ...o,
    });
  };

  it('a second process on the same shard is refused, told who holds it, and gets it once released', async () => {
    const target = await backend.fresh();
    const first = await processOn(target.open(), { pid: 10, ids: [0, 1] });
    const second = await processOn(target.open(), { pid: 11, ids: [1, 2] });
    expect(await first.claim()).toEqual([]);
    expect(await second.claim()).toEqual([
      { shard: 1, count: 4, host: 'machine-a', pid: 10, expiresAt: clock + TTL },
    ]);
    // Renewing is claiming again: the first keeps them.
    clock += 10_000;
    expect(await first.claim()).toEqual([]);
    await first.release();
    expect(await second.claim()).toEqual([]);
    expect(await first.claim()).toEqual([expect.objectContaining({ shard: 1, pid: 11 })]);
  });

  it('processes on other shards of the same count run side by side (a sharding manager’s shards)', async () => {
    const target = await backend.fresh();
    const leases = await Promise.all(
      [0, 1, 2, 3].map((id) => processOn(target.open(), { pid: 20 + id, ids: [id] })),
    );
    expect(await Promise.all(leases.map((lease) => lease.claim()))).toEqual([[], [], [], []]);
  });

  it('another shard count, or SHARD_COUNT=auto, stands in the way of every shard', async () => {
    const target = await backend.fresh();
    const two = await processOn(target.open(), { pid: 30, count: 2, ids: [0] });
    const four = await processOn(target.open(), { pid: 31, count: 4, ids: [3] });
    const auto = await processOn(target.open(), { pid: 32, count: 'auto', ids: [] });
    expect(await two.claim()).toEqual([]);
    expect(await four.claim()).toEqual([expect.objectContaining({ shard: 0, count: 2, pid: 30 })]);
    expect(await auto.claim()).toEqual([expect.objectContaining({ shard: 0, count: 2 })]);
    await two.release();
    expect(await auto.claim()).toEqual([]);
    expect(await four.claim()).toEqual([expect.objectContaining({ shard: 'every', count: 'auto', pid: 32 })]);
  });

  it('a lease nobody renews runs out (another machine died); on this host a dead holder frees it at once', async () => {
    const target = await backend.fresh();
    const elsewhere = await processOn(target.open(), { pid: 40, host: 'machine-b' });
    const here = await processOn(target.open(), { pid: 41 });
    expect(await elsewhere.claim()).toEqual([]);
    // machine-b's pid 40 is no process here: only time frees its lease.
    alive.delete(40);
    clock += TTL - 1;
    expect(await here.claim()).toHaveLength(4);
    clock += 1;
    expect(await here.claim()).toEqual([]);

    // kill -9 of pid 41, and a restart as pid 42 on the same host: no wait.
    const restarted = await processOn(target.open(), { pid: 42 });
    expect(await restarted.claim()).toHaveLength(4);
    alive.delete(41);
    expect(await restarted.claim()).toEqual([]);
    // A container restarted with the same pid on the same host is the same process: its own lease.
    const sameAgain = await processOn(target.open(), { pid: 42 });
    expect(await sameAgain.claim()).toEqual([]);
  });

  it('a waiting process starts once the holder stops, and says why it waited', async () => {
    const target = await backend.fresh();
    const first = await processOn(target.open(), { pid: 50, ids: [0] });
    const second = await processOn(target.open(), { pid: 51, ids: [0] });
    expect(await first.claim()).toEqual([]);
    const warn = vi.fn();
    const info = vi.fn();
    let started = false;
    const waiting = acquireShardLeases(second, {
      logger: { ...silentLogger, warn, info },
      pollMs: 5,
    }).then(() => {
      started = true;
    });
    await vi.waitFor(() => expect(warn).toHaveBeenCalledTimes(1));
    expect(warn.mock.calls[0]?.[1]).toEqual(
      expect.objectContaining({ holders: 'shard 0 of 4 on machine-a, pid 50' }),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started).toBe(false);
    await first.release();
    await waiting;
    expect(info).toHaveBeenCalledWith('the shards are free: this process runs them now', expect.anything());
  });

  it('a renewal that finds its shards taken over reports it once', async () => {
    const target = await backend.fresh();
    const frozen = await processOn(target.open(), { pid: 60, ids: [0] });
    const other = await processOn(target.open(), { pid: 61, ids: [0], host: 'machine-b' });
    expect(await frozen.claim()).toEqual([]);
    clock += TTL;
    expect(await other.claim()).toEqual([]);
    const onLost = vi.fn();
    const stop = keepShardLeases(frozen, { logger: silentLogger, onLost, renewMs: 5 });
    try {
      await vi.waitFor(() => expect(onLost).toHaveBeenCalledTimes(1));
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(onLost).toHaveBeenCalledTimes(1);
      expect(onLost.mock.calls[0]?.[0]).toEqual([expect.objectContaining({ host: 'machine-b', pid: 61 })]);
    } finally {
      stop();
    }
  });
});
