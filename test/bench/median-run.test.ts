/** How `npm run bench -- --repeat=N` chooses the run it reports for a P4 step. */
import { describe, expect, it } from 'vitest';
import { medianRun } from '../../bench/concurrency.ts';
import type { ConcurrencyStep } from '../../bench/options.ts';
import { rushFigures } from '../../bench/rush.ts';

/** A step whose fields other than the ones given are those of a clean run. */
function run(
  lateShare: number,
  cpuMsPerStreamSecond: number,
  unanswered = 0,
  rejectedPackets = 0,
): ConcurrencyStep {
  return {
    servers: 300,
    packets: 150_000,
    lateShare,
    cpuMsPerStreamSecond,
    unanswered,
    lostPackets: 0,
    rejectedPackets,
    silentServers: 0,
    rush: rushFigures([]),
  } as ConcurrencyStep;
}

describe('medianRun', () => {
  it('reports one run as it is, without a list of runs', () => {
    const only = run(0.02, 1.5);
    expect(medianRun([only])).toBe(only);
  });

  it('reports the whole run with the median late share, and lists every run in the order they ran', () => {
    const step = medianRun([run(0.131, 2.4), run(0.0078, 1.7), run(0.0141, 1.9)]);
    expect(step.lateShare).toBe(0.0141);
    // The other figures are that run's, not another's.
    expect(step.cpuMsPerStreamSecond).toBe(1.9);
    expect(step.runs?.map((r) => r.lateShare)).toEqual([0.131, 0.0078, 0.0141]);
    expect(step.runs?.map((r) => r.held)).toEqual([false, true, false]);
  });

  it('takes the lower middle of an even count, and judges each run by every rule of a held step', () => {
    const step = medianRun([run(0.05, 2), run(0.001, 1.4, 3), run(0.002, 1.5), run(0.2, 2.5)]);
    expect(step.lateShare).toBe(0.002);
    // 0.1 % late but three members never answered: not held.
    expect(step.runs?.map((r) => r.held)).toEqual([false, false, true, false]);
  });

  it('does not count a run whose packets failed authentication as held', () => {
    const step = medianRun([run(0.001, 1.4, 0, 2), run(0.002, 1.5), run(0.003, 1.5)]);
    expect(step.runs?.map((r) => r.held)).toEqual([false, true, true]);
  });
});
