import type { ShardConfig } from '../shard/config.ts';
import type { DoctorCheck } from './doctor-check.ts';

/** How `npm start` will run on this machine, as the doctor reports it (see defaultShardProcesses). */
export interface ProcessPlan {
  /** Shard processes `npm start` runs because `SHARD_COUNT` is unset; undefined: it runs one process. */
  readonly shardProcesses: number | undefined;
  /** The cores this process may use (`os.availableParallelism()`). */
  readonly cores: number;
}

/** `npm run doctor`'s row saying how many processes `npm start` runs here, and how to change it. */
export function processesCheck(shards: ShardConfig, plan: ProcessPlan): DoctorCheck {
  const name = 'Processes';
  const cores = `${plan.cores} core${plan.cores === 1 ? '' : 's'}`;
  if (plan.shardProcesses !== undefined) {
    return {
      name,
      status: 'ok',
      detail: `npm start runs ${plan.shardProcesses} shard processes and their manager (SHARD_COUNT unset: twice this machine's ${cores}), about 150 MB each; SHARD_COUNT=1 runs one process`,
    };
  }
  if (shards.count === 1) {
    return {
      name,
      status: 'ok',
      detail:
        plan.cores > 1
          ? `npm start runs one process (SHARD_COUNT=1), on one of this machine's ${cores}; unset, it runs twice the cores as shard processes and voices more servers at once`
          : 'npm start runs one process (one core)',
    };
  }
  return {
    name,
    status: 'ok',
    detail: `SHARD_COUNT=${shards.count}: npm start runs these shards in one process (${cores} here); npm run start:shards runs one process each`,
  };
}
