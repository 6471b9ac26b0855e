/** Whether the machine is busy (src/rush/machine-load.ts), from the kernel's CPU times. */
import { describe, expect, it } from 'vitest';
import { type CpuTimes, createMachineLoad } from '../../src/rush/index.ts';
import { machineCpuTimes, quotaCpuTimes } from '../../src/rush/machine-load.ts';

/** A kernel whose CPU times the test moves on, and a clock. */
function machine() {
  const times = { idle: 0, total: 0 };
  let clock = 0;
  return {
    sample: (): CpuTimes => ({ ...times }),
    now: () => clock,
    /** The clock moves `ms` while the kernel counts nothing (its ticks are coarser than the clock). */
    wait(ms: number) {
      clock += ms;
    },
    /** `ms` pass on a two-core machine with `idleShare` of its time idle. */
    pass(ms: number, idleShare: number) {
      clock += ms;
      times.total += 2 * ms;
      times.idle += 2 * ms * idleShare;
    },
  };
}

describe('createMachineLoad', () => {
  it('is busy after a window with less idle time than the threshold, and idle again after one with more', () => {
    const m = machine();
    const load = createMachineLoad({ busyBelowIdle: 0.1, windowMs: 100, sample: m.sample, now: m.now });
    expect(load.busy()).toBe(false);
    m.pass(100, 0.02);
    expect(load.busy()).toBe(true);
    m.pass(100, 0.5);
    expect(load.busy()).toBe(false);
  });

  it('keeps its verdict until a whole window has passed, reading the kernel at most once a window', () => {
    const m = machine();
    let reads = 0;
    const sample = () => {
      reads++;
      return m.sample();
    };
    const load = createMachineLoad({ windowMs: 100, sample, now: m.now });
    m.pass(100, 0);
    expect(load.busy()).toBe(true);
    const before = reads;
    // Idle now, but not for a whole window yet.
    m.pass(50, 1);
    expect(load.busy()).toBe(true);
    expect(load.busy()).toBe(true);
    expect(reads).toBe(before);
    m.pass(60, 1);
    expect(load.busy()).toBe(false);
  });

  it('keeps its verdict when the kernel counted nothing in the window', () => {
    const m = machine();
    const load = createMachineLoad({ windowMs: 100, sample: m.sample, now: m.now });
    m.pass(100, 0);
    expect(load.busy()).toBe(true);
    m.wait(150);
    expect(load.busy()).toBe(true);
    m.pass(100, 1);
    expect(load.busy()).toBe(false);
  });

  it('reads this machine: idle within the total, both counting up', () => {
    const first = machineCpuTimes();
    expect(first.total).toBeGreaterThan(0);
    expect(first.idle).toBeLessThanOrEqual(first.total);
  });
});

describe('quotaCpuTimes', () => {
  /** A container's cgroup files, as `read` finds them. */
  const files =
    (entries: Record<string, string>) =>
    (path: string): string | undefined =>
      entries[path];

  it('reads a cgroup v2 quota as cores, and the container’s CPU time against it', () => {
    let clock = 1_000;
    let usageUs = 5_000_000;
    const read = (path: string) =>
      ({
        '/sys/fs/cgroup/cpu.max': '150000 100000\n',
        '/sys/fs/cgroup/cpu.stat': `usage_usec ${usageUs}\nuser_usec 1\nsystem_usec 2\n`,
      })[path];
    const sample = quotaCpuTimes(read, () => clock);
    if (sample === undefined) throw new Error('no quota read');
    const load = createMachineLoad({ sample, now: () => clock, windowMs: 100 });
    // 100 ms on 1.5 cores is 150 ms of CPU: 140 used leaves 10 (6.7 % idle), busy; 100 used leaves a third, idle.
    clock += 100;
    usageUs += 140_000;
    expect(load.busy()).toBe(true);
    clock += 100;
    usageUs += 100_000;
    expect(load.busy()).toBe(false);
  });

  it('reads a cgroup v1 quota', () => {
    const sample = quotaCpuTimes(
      files({
        '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '200000\n',
        '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
        '/sys/fs/cgroup/cpuacct/cpuacct.usage': '3000000000\n',
      }),
      () => 500,
    );
    // Two cores for 500 ms of the clock, 3 s of CPU used (the deltas are what count).
    expect(sample?.()).toEqual({ total: 1_000, idle: -2_000 });
  });

  it('finds no quota without one: v2 "max", v1 -1, or no cgroup files', () => {
    expect(quotaCpuTimes(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeUndefined();
    expect(
      quotaCpuTimes(
        files({
          '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n',
          '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
        }),
      ),
    ).toBeUndefined();
    expect(quotaCpuTimes(files({}))).toBeUndefined();
  });
});
