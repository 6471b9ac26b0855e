import { cpus } from 'node:os';

/**
 * Whether the machine's cores are all taken (issue 44). A shard process's own timers tell it when its event loop is
 * behind, but not when the machine is: four shard processes on two cores each see their probe fire nearly on time
 * while together they ask for twice the cores there are, and every process's audio cycle then waits its turn for a
 * core. The machine's idle time, which every process reads alike from the kernel (`os.cpus()`, /proc/stat on
 * Linux), says so without a word between them.
 *
 * In a container limited by a CPU quota rather than by its cores, the kernel's figures are the host's: they show
 * idle time the container cannot use, and the gate then goes by its own timers alone, as it would without this.
 */

/** The kernel's CPU times summed over the cores, ms: `idle` and the `total` of every state. */
export interface CpuTimes {
  readonly idle: number;
  readonly total: number;
}

/** Options of {@link createMachineLoad}; the defaults are what Herald runs with. */
export interface MachineLoadOptions {
  /**
   * The machine is busy when less than this share of its cores' time was idle over the last window; default 0.1
   * (on two cores, a fifth of a core).
   */
  readonly busyBelowIdle?: number;
  /** The shortest window the idle share is measured over, ms; default 100 (the kernel counts in 10 ms ticks). */
  readonly windowMs?: number;
  /** The kernel's CPU times; `os.cpus()` summed by default. */
  readonly sample?: () => CpuTimes;
  /** Clock in ms; `performance.now` by default. */
  readonly now?: () => number;
}

/** Reads whether the machine is busy; cheap to call often (it reads the kernel at most once a window). */
export interface MachineLoad {
  /** True when the last full window had less idle time than {@link MachineLoadOptions.busyBelowIdle}. */
  busy(): boolean;
}

const DEFAULT_BUSY_BELOW_IDLE = 0.1;
const DEFAULT_WINDOW_MS = 100;

/** The kernel's CPU times of every core, summed. */
export function machineCpuTimes(): CpuTimes {
  let idle = 0;
  let total = 0;
  for (const { times } of cpus()) {
    idle += times.idle;
    total += times.user + times.nice + times.sys + times.idle + times.irq;
  }
  return { idle, total };
}

/** Creates a {@link MachineLoad}. */
export function createMachineLoad(options: MachineLoadOptions = {}): MachineLoad {
  const busyBelowIdle = options.busyBelowIdle ?? DEFAULT_BUSY_BELOW_IDLE;
  const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
  const sample = options.sample ?? machineCpuTimes;
  const now = options.now ?? (() => performance.now());
  let from = sample();
  let fromAt = now();
  let busy = false;
  return {
    busy() {
      const at = now();
      if (at - fromAt < windowMs) return busy;
      const to = sample();
      const total = to.total - from.total;
      // No tick counted yet (a clock that moved faster than the kernel's): the last verdict stands.
      if (total > 0) {
        busy = (to.idle - from.idle) / total < busyBelowIdle;
        from = to;
        fromAt = at;
      }
      return busy;
    },
  };
}
