import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/**
 * Whether the machine's cores are all taken (issue 44). A shard process's own timers tell it when its event loop is
 * behind, but not when the machine is: four shard processes on two cores each see their probe fire nearly on time
 * while together they ask for twice the cores there are, and every process's audio cycle then waits its turn for a
 * core. The machine's idle time, which every process reads alike from the kernel (`os.cpus()`, /proc/stat on
 * Linux), says so without a word between them.
 *
 * In a container held by a CPU quota (`docker run --cpus`, compose's `cpus:`), the machine's figures are the host's
 * and show idle time the container may not use: there the quota counts too, from the container's own cgroup (its
 * CPU time against the quota's share of the wall clock), and the container is busy when either says so.
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

/** Reads a file's text; undefined when it cannot (absent, not permitted). */
export type ReadText = (path: string) => string | undefined;

const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/**
 * The CPU times of this process's cgroup when it is held by a CPU quota, as if it were a machine of that many cores
 * (`total`: the quota's share of the wall clock; `idle`: what of it the cgroup did not use); undefined without a
 * quota. cgroup v2 (`cpu.max`, `cpu.stat`), else v1 (`cpu.cfs_quota_us`, `cpuacct.usage`), as mounted in a
 * container.
 */
export function quotaCpuTimes(
  read: ReadText = readText,
  now: () => number = () => performance.now(),
): (() => CpuTimes) | undefined {
  const quota = cgroupQuota(read);
  if (quota === undefined || !Number.isFinite(quota.usedMs())) return undefined;
  const { cores, usedMs } = quota;
  return () => {
    const total = now() * cores;
    return { total, idle: total - usedMs() };
  };
}

/** The cgroup's quota in cores and a reader of the CPU time it used (ms); undefined without a quota. */
function cgroupQuota(read: ReadText): { cores: number; usedMs: () => number } | undefined {
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2 !== undefined) {
    const [quota, period] = v2.map(Number);
    if (!quota || !period) return undefined;
    return {
      cores: quota / period,
      usedMs: () => Number(/^usage_usec (\d+)$/m.exec(read('/sys/fs/cgroup/cpu.stat') ?? '')?.[1]) / 1000,
    };
  }
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'));
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us'));
  if (!(quota > 0) || !(period > 0)) return undefined;
  return {
    cores: quota / period,
    usedMs: () => Number(read('/sys/fs/cgroup/cpuacct/cpuacct.usage')) / 1e6,
  };
}

/**
 * Creates a {@link MachineLoad}: by default the machine's, and the container's quota where there is one (busy when
 * either is); with `options.sample`, that alone.
 */
export function createMachineLoad(options: MachineLoadOptions = {}): MachineLoad {
  if (options.sample !== undefined) return createLoad(options);
  const machine = createLoad(options);
  const quota = quotaCpuTimes();
  if (quota === undefined) return machine;
  const container = createLoad({ ...options, sample: quota });
  return { busy: () => container.busy() || machine.busy() };
}

function createLoad(options: MachineLoadOptions): MachineLoad {
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
