import { describe, expect, it } from 'vitest';
import { shardExecArgv } from '../../src/shard/helper-threads.ts';

const none = { nodeOptions: undefined, execArgv: [] };

describe('the V8 helper threads of shard processes', () => {
  it('gives each shard process its share of the cores: one on two cores with four shards', () => {
    expect(shardExecArgv({ cores: 2, processes: 4, ...none })).toEqual(['--v8-pool-size=1']);
    expect(shardExecArgv({ cores: 2, processes: 2, ...none })).toEqual(['--v8-pool-size=1']);
    expect(shardExecArgv({ cores: 8, processes: 4, ...none })).toEqual(['--v8-pool-size=2']);
    expect(shardExecArgv({ cores: 12, processes: 4, ...none })).toEqual(['--v8-pool-size=3']);
  });

  it('never asks for none, nor for more than Node gives by default', () => {
    expect(shardExecArgv({ cores: 1, processes: 16, ...none })).toEqual(['--v8-pool-size=1']);
    expect(shardExecArgv({ cores: 4, processes: 0, ...none })).toEqual([]);
    expect(shardExecArgv({ cores: 64, processes: 2, ...none })).toEqual([]);
  });

  it("keeps the operator's own pool size, from NODE_OPTIONS or the manager's flags", () => {
    const machine = { cores: 2, processes: 4 };
    expect(shardExecArgv({ ...machine, nodeOptions: '--v8-pool-size=3', execArgv: [] })).toEqual([]);
    expect(
      shardExecArgv({ ...machine, nodeOptions: '--max-old-space-size=512  --v8-pool-size 2', execArgv: [] }),
    ).toEqual([]);
    expect(shardExecArgv({ ...machine, nodeOptions: undefined, execArgv: ['--v8-pool-size=0'] })).toEqual([]);
    // Another flag of the same prefix is not the pool size.
    expect(shardExecArgv({ ...machine, nodeOptions: '--v8-pool-sizes=2', execArgv: [] })).toEqual([
      '--v8-pool-size=1',
    ]);
  });
});
