import {
  MAX_DEFAULT_SHARDS,
  type MachineShape,
  SHARD_PROCESS_MEMORY_BYTES,
  type ShardConfig,
} from '../shard/config.ts';
import type { DoctorCheck } from './doctor-check.ts';

/** How `npm start` will run on this machine, as the doctor reports it (see defaultShardProcesses). */
export interface ProcessPlan extends MachineShape {
  /** Shard processes `npm start` runs because `SHARD_COUNT` is unset; undefined: it runs one process. */
  readonly shardProcesses: number | undefined;
}

/** `npm run doctor`'s row saying how many processes `npm start` runs here, and how to change it. */
export function processesCheck(shards: ShardConfig, plan: ProcessPlan): DoctorCheck {
  const name = 'Processes';
  const cores = `${plan.cores} core${plan.cores === 1 ? '' : 's'}`;
  const memory = `${(plan.memoryBytes / 2 ** 30).toFixed(1)} GB of memory`;
  const each = `${SHARD_PROCESS_MEMORY_BYTES / 2 ** 20} MB each`;
  if (plan.shardProcesses !== undefined) {
    const byCores = Math.min(MAX_DEFAULT_SHARDS, 2 * plan.cores);
    const why =
      plan.shardProcesses < byCores
        ? `SHARD_COUNT unset: twice this machine's ${cores} would be ${byCores}, its ${memory} hold ${plan.shardProcesses} at ${each}`
        : `SHARD_COUNT unset: twice this machine's ${cores}`;
    return {
      name,
      status: 'ok',
      detail: `npm start runs ${plan.shardProcesses} shard processes and their manager (${why}), about 150 MB each idle; SHARD_COUNT=1 runs one process`,
    };
  }
  // Set to 1 by the operator (ONE_SHARD, which names shard 0, is what an unset SHARD_COUNT parses to).
  if (shards.count === 1 && shards.ids === undefined) {
    return {
      name,
      status: 'ok',
      detail:
        plan.cores > 1
          ? `npm start runs one process (SHARD_COUNT=1), on one of this machine's ${cores}; unset, it runs twice the cores as shard processes and voices more servers at once`
          : 'npm start runs one process (one core)',
    };
  }
  if (shards.count === 1) {
    return {
      name,
      status: 'ok',
      detail:
        plan.cores > 1
          ? `npm start runs one process, on one of this machine's ${cores}: its ${memory} are too little for shard processes (${each}); SHARD_COUNT=N with npm run start:shards runs N anyway`
          : 'npm start runs one process (one core)',
    };
  }
  return {
    name,
    status: 'ok',
    detail: `SHARD_COUNT=${shards.count}: npm start runs these shards in one process (${cores} here); npm run start:shards runs one process each`,
  };
}
