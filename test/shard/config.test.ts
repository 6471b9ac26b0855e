import { availableParallelism, totalmem } from 'node:os';
import { describe, expect, it, vi } from 'vitest';
import { clientShardOptions, ownsGuild } from '../../src/shard/client.ts';
import {
  defaultShardProcesses,
  ONE_SHARD,
  parseShardConfig,
  parseShardIds,
  shardOfGuild,
} from '../../src/shard/config.ts';
import { machineShape } from '../../src/shard/machine.ts';

describe('parseShardConfig', () => {
  it.each([
    { env: {}, value: { count: 1, ids: [0], managed: false } },
    { env: { SHARD_COUNT: '4' }, value: { count: 4, ids: undefined, managed: false } },
    { env: { SHARD_COUNT: 'auto' }, value: { count: 'auto', ids: undefined, managed: false } },
    {
      env: { SHARD_COUNT: '16', SHARD_IDS: '8-15' },
      value: { count: 16, ids: [8, 9, 10, 11, 12, 13, 14, 15] },
    },
    { env: { SHARD_COUNT: '8', SHARD_IDS: '0,2,4-5' }, value: { count: 8, ids: [0, 2, 4, 5] } },
    { env: { SHARD_COUNT: '8', SHARD_IDS: ' 3 , 1-2,2 ' }, value: { count: 8, ids: [1, 2, 3] } },
    // The ShardingManager's child: its own shard, whatever SHARD_IDS the group had.
    {
      env: { SHARDING_MANAGER: 'true', SHARDS: '9', SHARD_COUNT: '16', SHARD_IDS: '8-15' },
      value: { count: 16, ids: [9], managed: true },
    },
  ])('$env', ({ env, value }) => {
    const result = parseShardConfig(env);
    expect(result).toMatchObject({ ok: true, value });
  });

  it.each([
    { env: { SHARD_IDS: '0-7' }, problem: /SHARD_IDS needs SHARD_COUNT/ },
    { env: { SHARD_COUNT: '0' }, problem: /SHARD_COUNT must be a whole number from 1/ },
    { env: { SHARD_COUNT: 'four' }, problem: /SHARD_COUNT must be a whole number/ },
    { env: { SHARD_COUNT: '2.5' }, problem: /SHARD_COUNT must be a whole number/ },
    { env: { SHARD_COUNT: 'auto', SHARD_IDS: '0-7' }, problem: /SHARD_IDS needs a fixed SHARD_COUNT/ },
    {
      env: { SHARD_COUNT: '16', SHARD_IDS: '8-16' },
      problem: /SHARD_IDS has 16, but with SHARD_COUNT=16 shard ids go from 0 to 15/,
    },
    { env: { SHARD_COUNT: '16', SHARD_IDS: '7-3' }, problem: /range 7-3, which runs backwards/ },
    {
      env: { SHARD_COUNT: '16', SHARD_IDS: '0-7;8' },
      problem: /"0-7;8", which is not a shard id or a range/,
    },
    { env: { SHARD_COUNT: '16', SHARD_IDS: '0,,1' }, problem: /"", which is not a shard id/ },
    { env: { SHARDING_MANAGER: 'true', SHARDS: '4', SHARD_COUNT: '4' }, problem: /do not name a shard/ },
  ])('refuses $env', ({ env, problem }) => {
    const result = parseShardConfig(env);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems.join('\n')).toMatch(problem);
  });
});

describe('defaultShardProcesses: what npm start runs', () => {
  const GB = 2 ** 30;
  const roomy = (cores: number) => ({ cores, memoryBytes: 64 * GB });
  const auto = { SHARD_PROCESSES: 'auto' };

  it('one process (undefined) unless the operator asks, whatever the machine', () => {
    for (const cores of [1, 2, 4, 64]) expect(defaultShardProcesses({}, roomy(cores))).toBeUndefined();
    // Set but empty is not set, as everywhere in the configuration.
    expect(defaultShardProcesses({ SHARD_PROCESSES: ' ', SHARD_COUNT: '' }, roomy(2))).toBeUndefined();
  });

  it('SHARD_PROCESSES=N runs N; 1 (or a value the configuration refuses) runs one process', () => {
    expect(defaultShardProcesses({ SHARD_PROCESSES: '3' }, roomy(2))).toBe(3);
    for (const value of ['1', '0', '-2', 'two', '2.5']) {
      expect(defaultShardProcesses({ SHARD_PROCESSES: value }, roomy(2))).toBeUndefined();
    }
  });

  it('auto: twice the cores, at most 16; one process (undefined) on a single core', () => {
    expect([1, 2, 3, 4, 8, 9, 64].map((cores) => defaultShardProcesses(auto, roomy(cores)))).toEqual([
      undefined,
      4,
      6,
      8,
      16,
      16,
      16,
    ]);
    expect(defaultShardProcesses({ SHARD_PROCESSES: 'AUTO' }, roomy(2))).toBe(4);
  });

  it('auto: no more than the memory holds at 512 MB each; one process below two', () => {
    const on2Cores = [0.5, 0.99, 1, 1.5, 2, 24].map((gb) =>
      defaultShardProcesses(auto, { cores: 2, memoryBytes: gb * GB }),
    );
    expect(on2Cores).toEqual([undefined, undefined, 2, 3, 4, 4]);
    expect(defaultShardProcesses(auto, { cores: 8, memoryBytes: 3 * GB })).toBe(6);
  });

  it('the operator’s SHARD_COUNT or SHARD_IDS, and a shard the manager spawned, run as they say', () => {
    for (const env of [
      { SHARD_COUNT: '1' },
      { SHARD_COUNT: 'auto' },
      { SHARD_IDS: '0-3' },
      { SHARDING_MANAGER: 'true', SHARDS: '0', SHARD_COUNT: '4' },
    ]) {
      expect(defaultShardProcesses({ ...env, ...auto }, roomy(2))).toBeUndefined();
    }
  });

  it('the configuration refuses a SHARD_PROCESSES that is no count, or one beside SHARD_COUNT', () => {
    for (const value of ['0', 'two', '2.5', '-1']) {
      const result = parseShardConfig({ SHARD_PROCESSES: value });
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.problems.join('\n')).toMatch(/^SHARD_PROCESSES must be a whole number/);
    }
    const both = parseShardConfig({ SHARD_PROCESSES: 'auto', SHARD_COUNT: '4' });
    expect(both.ok).toBe(false);
    if (!both.ok) expect(both.problems.join('\n')).toMatch(/Set one or the other/);
    expect(parseShardConfig({ SHARD_PROCESSES: '4' })).toEqual({ ok: true, value: ONE_SHARD });
    expect(parseShardConfig({ SHARD_PROCESSES: 'auto' }).ok).toBe(true);
  });
});

describe('machineShape', () => {
  it('the cores this process may use, and memory no more than the machine has', () => {
    const shape = machineShape();
    expect(shape.cores).toBe(availableParallelism());
    expect(shape.memoryBytes).toBeGreaterThan(0);
    expect(shape.memoryBytes).toBeLessThanOrEqual(totalmem());
  });

  it('a container’s memory limit, when it is below the machine’s', () => {
    const limit = vi.spyOn(process, 'constrainedMemory').mockReturnValue(768 * 2 ** 20);
    try {
      expect(machineShape().memoryBytes).toBe(768 * 2 ** 20);
      limit.mockReturnValue(0);
      expect(machineShape().memoryBytes).toBe(totalmem());
      limit.mockReturnValue(2 ** 64);
      expect(machineShape().memoryBytes).toBe(totalmem());
    } finally {
      limit.mockRestore();
    }
  });
});

describe('parseShardIds', () => {
  it('sorts and dedupes', () => {
    expect(parseShardIds('5,1-3,2', 6)).toEqual({ ok: true, value: [1, 2, 3, 5] });
  });
});

describe('shards and servers', () => {
  it.each([
    // (id >> 22) % count: Discord's own rule.
    { guildId: String((41n << 22n) | 12345n), count: 4, shard: 1 },
    { guildId: String((41n << 22n) | 12345n), count: 16, shard: 9 },
    { guildId: '0', count: 7, shard: 0 },
  ])('server $guildId is on shard $shard of $count', ({ guildId, count, shard }) => {
    expect(shardOfGuild(guildId, count)).toBe(shard);
    expect(ownsGuild({ shards: [shard], shardCount: count }, guildId)).toBe(true);
    expect(ownsGuild({ shards: [(shard + 1) % count], shardCount: count }, guildId)).toBe(count === 1);
  });

  it('gives the client explicit shards, so discord.js never reads SHARD_COUNT from the environment itself', () => {
    expect(clientShardOptions({ count: 1, ids: [0], managed: false })).toEqual({
      shards: [0],
      shardCount: 1,
    });
    expect(clientShardOptions({ count: 4, ids: undefined, managed: false })).toEqual({
      shards: [0, 1, 2, 3],
      shardCount: 4,
    });
    expect(clientShardOptions({ count: 16, ids: [9], managed: true })).toEqual({
      shards: [9],
      shardCount: 16,
    });
    expect(clientShardOptions({ count: 'auto', ids: undefined, managed: false })).toEqual({ shards: 'auto' });
  });
});
