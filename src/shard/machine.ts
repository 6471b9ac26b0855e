import { availableParallelism, totalmem } from 'node:os';
import type { MachineShape } from './config.ts';

/**
 * This machine as `npm start` and the doctor size Herald to it: the cores the process may use, and the memory it may
 * take, which in a container is its cgroup limit (`process.constrainedMemory()`; none reads as 0 or as more than
 * the machine has).
 */
export function machineShape(): MachineShape {
  const total = totalmem();
  const limit = process.constrainedMemory();
  return { cores: availableParallelism(), memoryBytes: limit > 0 && limit < total ? limit : total };
}
