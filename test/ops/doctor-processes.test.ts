import { describe, expect, it } from 'vitest';
import { processesCheck } from '../../src/ops/index.ts';
import { ONE_SHARD } from '../../src/shard/config.ts';

describe('the doctor’s Processes row', () => {
  it('says how many shard processes npm start runs when SHARD_COUNT is unset, and how to have one', () => {
    const row = processesCheck(ONE_SHARD, { shardProcesses: 4, cores: 2 });
    expect(row).toMatchObject({ name: 'Processes', status: 'ok' });
    expect(row.detail).toMatch(
      /^npm start runs 4 shard processes .*twice this machine's 2 cores.*SHARD_COUNT=1/,
    );
  });

  it('one process: on purpose on several cores (and what unset would do), or on one core', () => {
    const chosen = { count: 1, ids: undefined, managed: false } as const;
    expect(processesCheck(chosen, { shardProcesses: undefined, cores: 2 }).detail).toMatch(
      /^npm start runs one process \(SHARD_COUNT=1\).*unset, it runs twice the cores/,
    );
    expect(processesCheck(ONE_SHARD, { shardProcesses: undefined, cores: 1 }).detail).toBe(
      'npm start runs one process (one core)',
    );
  });

  it('an explicit count: npm start runs those shards in one process, start:shards one process each', () => {
    const detail = processesCheck(
      { count: 8, ids: undefined, managed: false },
      { shardProcesses: undefined, cores: 4 },
    ).detail;
    expect(detail).toMatch(/^SHARD_COUNT=8: npm start runs these shards in one process \(4 cores here\)/);
  });
});
