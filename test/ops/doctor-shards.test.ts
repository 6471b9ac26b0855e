import { describe, expect, it } from 'vitest';
import { shardsRunningCheck } from '../../src/ops/doctor-shards.ts';
import type { ShardLeaseHolder } from '../../src/shard/lease.ts';

describe('the doctor’s Shards running row', () => {
  const now = 1_000_000;
  const here = { host: 'machine-a', now, isAlive: (pid: number) => pid !== 99 };
  const lease = (o: Partial<ShardLeaseHolder>): ShardLeaseHolder => ({
    shard: 0,
    count: 4,
    host: 'machine-b',
    pid: 12,
    expiresAt: now + 20_000,
    ...o,
  });
  const all4 = { count: 4, ids: [0, 1, 2, 3] } as const;

  it('none when no lease is live: run out, or held by a process of this host that is gone', () => {
    const row = shardsRunningCheck(
      [lease({ expiresAt: now }), lease({ host: 'machine-a', pid: 99 })],
      all4,
      here,
    );
    expect(row).toEqual({
      name: 'Shards running',
      status: 'ok',
      detail: 'none: no Herald runs on this database now',
    });
  });

  it('the same shards running: npm start here would be a standby', () => {
    const row = shardsRunningCheck([lease({ shard: 2 })], all4, here);
    expect(row.status).toBe('ok');
    expect(row.detail).toBe(
      'shard 2 of 4 on machine-b, pid 12; npm start here would wait for them as a standby, and take over when they stop',
    );
  });

  it('other shards of the same count: free', () => {
    const row = shardsRunningCheck([lease({ shard: 2 })], { count: 4, ids: [0, 1] }, here);
    expect(row.detail).toMatch(/; this configuration's shards are free$/);
  });

  it('another count, or auto: a failure with the fix (Herald still speaks from the other)', () => {
    const row = shardsRunningCheck([lease({ shard: 3, count: 8 })], all4, here);
    expect(row).toMatchObject({ status: 'fail', blocks: false });
    expect(row.detail).toBe(
      'shard 3 of 8 on machine-b, pid 12: SHARD_COUNT=8 there, 4 here, so npm start here would wait until they stop',
    );
    expect(row.fix).toMatch(/same numeric SHARD_COUNT/);
    expect(shardsRunningCheck([lease({ shard: 'every', count: 'auto' })], all4, here).status).toBe('fail');
    expect(shardsRunningCheck([lease({})], { count: 'auto', ids: [] }, here).status).toBe('fail');
  });
});
