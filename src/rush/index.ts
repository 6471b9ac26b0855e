// Playing comes first (issue 44): the gate the starts of utterances pass, so that a rush of them never holds the
// audio cycle of the streams already playing. Import from here.
export {
  createStartGate,
  DEFAULT_MAX_RUNNING,
  type Release,
  type StartGate,
  type StartGateOptions,
} from './start-gate.ts';
