// Playing comes first (issue 44): the gate the starts of utterances pass, so that a rush of them never holds the
// audio cycle of the streams already playing. Import from here.

export { type Answering, createAnswering } from './answering.ts';
export {
  type CpuTimes,
  createMachineLoad,
  type MachineLoad,
  type MachineLoadOptions,
} from './machine-load.ts';
export {
  createStartGate,
  DEFAULT_MAX_RUNNING,
  type Release,
  type StartGate,
  type StartGateOptions,
} from './start-gate.ts';
