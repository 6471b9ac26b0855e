/** CPU time as the micro-benchmarks (`bench:dave-frame`, `bench:ledger`, the bench's host speed) measure it. */

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
