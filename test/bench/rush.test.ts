/** The rush in figures (bench/rush.ts): per-second lateness, the rush apart from the steady, start latency. */
import { describe, expect, it } from 'vitest';
import {
  allPlayingSeconds,
  cpuMsPerUtterance,
  perSecond,
  rushAndSteady,
  rushFigures,
  startLatency,
} from '../../bench/rush.ts';

describe('perSecond', () => {
  it('buckets packets by whole second, counting only those more than 40 ms late', () => {
    const seconds = perSecond([
      { atSeconds: 0.1, latenessMs: 5 },
      { atSeconds: 0.9, latenessMs: 40 },
      { atSeconds: 2.5, latenessMs: 41 },
      { atSeconds: 2.99, latenessMs: 120 },
      { atSeconds: 2.0, latenessMs: -3 },
      { atSeconds: 2.1, latenessMs: 0 },
    ]);
    expect(seconds).toEqual([
      { second: 0, packets: 2, latePercent: 0, maxLatenessMs: 40 },
      { second: 1, packets: 0, latePercent: 0, maxLatenessMs: 0 },
      { second: 2, packets: 4, latePercent: 50, maxLatenessMs: 120 },
    ]);
  });
});

describe('rushAndSteady', () => {
  it('puts seconds with a start or an end in the rush and the rest in the steady part', () => {
    const seconds = perSecond([
      { atSeconds: 0.5, latenessMs: 100 },
      { atSeconds: 0.6, latenessMs: 0 },
      { atSeconds: 1.5, latenessMs: 0 },
      { atSeconds: 1.6, latenessMs: 0 },
      { atSeconds: 2.5, latenessMs: 300 },
      { atSeconds: 2.6, latenessMs: 50 },
    ]);
    const { rush, steady } = rushAndSteady(seconds, [0.5], [2.6]);
    expect(rush).toEqual({ packets: 4, latePercent: 75, maxLatenessMs: 300 });
    expect(steady).toEqual({ packets: 2, latePercent: 0, maxLatenessMs: 0 });
  });
});

describe('startLatency', () => {
  it('gives nearest-rank p50 and p95 and the max, whatever the order', () => {
    const values = Array.from({ length: 20 }, (_, i) => (20 - i) * 100);
    expect(startLatency(values)).toEqual({ p50: 1000, p95: 1900, max: 2000, n: 20 });
  });

  it('is all 0 with no start', () => {
    expect(startLatency([])).toEqual({ p50: 0, p95: 0, max: 0, n: 0 });
  });
});

describe('rushFigures', () => {
  it('times each start from its own /speak, finds the worst second and leaves silent servers out', () => {
    const figures = rushFigures([
      {
        askedAtSeconds: 0,
        packets: [
          { atSeconds: 1.2, latenessMs: 0 },
          { atSeconds: 2.5, latenessMs: 0 },
          { atSeconds: 3.1, latenessMs: 0 },
        ],
      },
      {
        askedAtSeconds: 0.25,
        packets: [
          { atSeconds: 0.75, latenessMs: 10 },
          { atSeconds: 2.2, latenessMs: 90 },
          { atSeconds: 2.3, latenessMs: 0 },
          { atSeconds: 3.9, latenessMs: 50 },
        ],
      },
      { askedAtSeconds: 0.1, packets: [] },
    ]);
    expect(figures.startLatencyMs).toEqual({ p50: 500, p95: 1200, max: 1200, n: 2 });
    expect(figures.worstSecond).toEqual({ second: 3, packets: 2, latePercent: 50, maxLatenessMs: 50 });
    // Starts in seconds 0 and 1, ends in 3: second 2 is the only steady one.
    expect(figures.steady).toEqual({ packets: 3, latePercent: 33.33, maxLatenessMs: 90 });
    expect(figures.rush).toEqual({ packets: 4, latePercent: 25, maxLatenessMs: 50 });
  });
});

describe('allPlayingSeconds', () => {
  const stream = (from: number, to: number) => ({
    askedAtSeconds: 0,
    packets: [
      { atSeconds: from, latenessMs: 0 },
      { atSeconds: to, latenessMs: 0 },
    ],
  });

  it('is the whole seconds after the last start and before the first end', () => {
    // The last stream starts at 3.2 s and the first ends at 7.5 s: seconds 4, 5 and 6 had every stream playing.
    expect(allPlayingSeconds([stream(0.4, 9), stream(3.2, 12), stream(1, 7.5)])).toEqual([4, 5, 6]);
    // A start exactly on a second's beginning leaves that second whole.
    expect(allPlayingSeconds([stream(2, 5)])).toEqual([2, 3, 4]);
  });

  it('is empty when the starts outlast the first end, or nothing was heard', () => {
    expect(allPlayingSeconds([stream(0.5, 4.2), stream(4.1, 9)])).toEqual([]);
    expect(allPlayingSeconds([{ askedAtSeconds: 0, packets: [] }])).toEqual([]);
  });
});

describe('cpuMsPerUtterance', () => {
  it('is the step’s CPU less its audio at the steady rate, per utterance', () => {
    // 10,000 ms of CPU; 1,000 stream-seconds at 1.5 ms each is 1,500 ms of playing; 8,500 ms over 100 utterances.
    expect(
      cpuMsPerUtterance({
        cpuMs: 10_000,
        streamedSeconds: 1_000,
        steadyCpuMsPerStreamSecond: 1.5,
        utterances: 100,
      }),
    ).toBe(85);
  });

  it('is null without a steady rate or an utterance, and never below 0', () => {
    const step = { cpuMs: 100, streamedSeconds: 1_000, steadyCpuMsPerStreamSecond: 1.5, utterances: 10 };
    expect(cpuMsPerUtterance({ ...step, steadyCpuMsPerStreamSecond: null })).toBeNull();
    expect(cpuMsPerUtterance({ ...step, utterances: 0 })).toBeNull();
    expect(cpuMsPerUtterance(step)).toBe(0);
  });
});
