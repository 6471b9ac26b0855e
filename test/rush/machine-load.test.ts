/** Whether the machine is busy (src/rush/machine-load.ts), from the kernel's CPU times. */
import { describe, expect, it } from 'vitest';
import { type CpuTimes, createMachineLoad } from '../../src/rush/index.ts';
import { machineCpuTimes } from '../../src/rush/machine-load.ts';

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
