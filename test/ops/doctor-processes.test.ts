import { describe, expect, it } from 'vitest';
import { processesCheck } from '../../src/ops/index.ts';
import { ONE_SHARD } from '../../src/shard/config.ts';

describe('the doctor’s Processes row', () => {
  const GB = 2 ** 30;

  it('says how many shard processes npm start runs when SHARD_PROCESSES asks for them, and how to have one', () => {
    const row = processesCheck(ONE_SHARD, { shardProcesses: 4, cores: 2, memoryBytes: 24 * GB });
    expect(row).toMatchObject({ name: 'Processes', status: 'ok' });
    expect(row.detail).toMatch(
      /^npm start runs 4 shard processes .*twice this machine's 2 cores.*unset, SHARD_PROCESSES runs one process/,
    );
  });

  it('one process by default, and what SHARD_PROCESSES=auto would run here', () => {
    expect(
      processesCheck(ONE_SHARD, { shardProcesses: undefined, cores: 2, memoryBytes: 24 * GB }).detail,
    ).toMatch(/^npm start runs one process \(the default.*SHARD_PROCESSES=auto would run 4 shard processes/);
  });

  it('one process on one core', () => {
    expect(
      processesCheck(ONE_SHARD, { shardProcesses: undefined, cores: 1, memoryBytes: 24 * GB }).detail,
    ).toBe('npm start runs one process (one core)');
  });

  it('fewer shard processes, or one, where the memory holds no more: says so, and what it holds', () => {
    expect(processesCheck(ONE_SHARD, { shardProcesses: 2, cores: 2, memoryBytes: 1.2 * GB }).detail).toMatch(
      /^npm start runs 2 shard processes .*twice this machine's 2 cores would be 4, its 1\.2 GB of memory hold 2 at 512 MB each/,
    );
    expect(
      processesCheck(ONE_SHARD, { shardProcesses: undefined, cores: 2, memoryBytes: 0.8 * GB }).detail,
    ).toMatch(
      /^npm start runs one process, on one of this machine's 2 cores: its 0\.8 GB of memory are too little for shard processes \(512 MB each\)/,
    );
  });

  it('an explicit count: npm start runs those shards in one process, start:shards one process each', () => {
    const detail = processesCheck(
      { count: 8, ids: undefined, managed: false },
      { shardProcesses: undefined, cores: 4, memoryBytes: 24 * GB },
    ).detail;
    expect(detail).toMatch(/^SHARD_COUNT=8: npm start runs these shards in one process \(4 cores here\)/);
  });
});
