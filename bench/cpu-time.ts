/**
 * CPU time as the micro-benchmarks (`bench:dave-frame`, `bench:ledger`, the bench's host speed) measure it, and
 * this process's CPU by thread (the emulated world's share of a P4 step).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU ms (user + system) this process spent since `since`, a `process.cpuUsage()` reading. */
export function cpuMsSince(since: NodeJS.CpuUsage): number {
  const spent = process.cpuUsage(since);
  return (spent.user + spent.system) / 1000;
}

/** The median of `values` (the upper middle of an even count), to `decimals` decimals. */
export function median(values: readonly number[], decimals: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const factor = 10 ** decimals;
  return Math.round((sorted[Math.floor(sorted.length / 2)] ?? Number.NaN) * factor) / factor;
}

/**
 * Median CPU µs per call of `work` (user + system, GC included) over `rounds` rounds of `calls` calls, to two
 * decimals; `prepare` runs untimed before each round.
 */
export function cpuMicrosPerCall(
  work: (call: number) => unknown,
  o: { readonly calls: number; readonly rounds: number; readonly prepare?: () => void },
): number {
  const perRound: number[] = [];
  for (let round = 0; round < o.rounds; round++) {
    o.prepare?.();
    const before = process.cpuUsage();
    for (let i = 0; i < o.calls; i++) work(i);
    perRound.push((cpuMsSince(before) * 1000) / o.calls);
  }
  return median(perRound, 2);
}

/**
 * CPU ms (user + system) each of this process's threads has spent, summed by thread name (Linux:
 * /proc/self/task/<tid>/stat; `new Worker(..., { name })` names a worker's thread, V8's helper threads, GC
 * among them, are `V8Worker`). Empty where there is no /proc.
 */
export function cpuMsByThreadName(): Map<string, number> {
  const byName = new Map<string, number>();
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return byName;
  }
  for (const tid of tasks) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // "tid (name) state ..." : the name may hold spaces and parentheses, so fields count from the last ')'.
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime and stime, fields 14 and 15 of stat, in clock ticks of 10 ms (USER_HZ 100 on Linux).
      const ticks = Number(fields[11]) + Number(fields[12]);
      byName.set(name, (byName.get(name) ?? 0) + ticks * 10);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}

/** What each thread name spent between two {@link cpuMsByThreadName} readings (names new since count from 0). */
export function cpuMsByThreadNameSince(before: ReadonlyMap<string, number>): Map<string, number> {
  const spent = new Map<string, number>();
  for (const [name, ms] of cpuMsByThreadName()) spent.set(name, ms - (before.get(name) ?? 0));
  return spent;
}
