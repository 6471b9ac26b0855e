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
  const byCores = Math.min(MAX_DEFAULT_SHARDS, 2 * plan.cores);
  const byMemory = Math.floor(plan.memoryBytes / SHARD_PROCESS_MEMORY_BYTES);
  if (plan.shardProcesses !== undefined) {
    const why =
      plan.shardProcesses < byCores && plan.shardProcesses === byMemory
        ? `twice this machine's ${cores} would be ${byCores}, its ${memory} hold ${plan.shardProcesses} at ${each}`
        : `SHARD_PROCESSES; twice this machine's ${cores} is ${byCores}`;
    return {
      name,
      status: 'ok',
      detail: `npm start runs ${plan.shardProcesses} shard processes and their manager (${why}), about 150 MB each idle; unset, SHARD_PROCESSES runs one process`,
    };
  }
  if (shards.count === 1) {
    const more = Math.min(byCores, byMemory);
    return {
      name,
      status: 'ok',
      detail:
        plan.cores > 1 && more >= 2
          ? `npm start runs one process (the default, about 120 MB idle); SHARD_PROCESSES=auto would run ${more} shard processes on this machine's ${cores}, for the most voices at once (about 600 MB idle)`
          : plan.cores > 1
            ? `npm start runs one process, on one of this machine's ${cores}: its ${memory} are too little for shard processes (${each})`
            : 'npm start runs one process (one core)',
    };
  }
  return {
    name,
    status: 'ok',
    detail: `SHARD_COUNT=${shards.count}: npm start runs these shards in one process (${cores} here); npm run start:shards runs one process each`,
  };
}
