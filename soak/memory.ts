/** Herald's memory and open files during a soak: sampled every few seconds, judged at the end. */
import { readMetrics } from './metrics.ts';
import { median, slope } from './stats.ts';

/** One sample: ms since the start, resident MB, open files, V8 heap in use (MB; undefined when not read). */
export interface MemorySample {
  readonly t: number;
  readonly rss: number;
  readonly fds: number;
  readonly heap: number | undefined;
}

/** What {@link memoryOf} reports. */
export interface MemoryFigures {
  readonly rssMb: { first: number; last: number; max: number; slopeMbPerHour: number };
  /** V8's heap in use (Herald's /metrics): what JavaScript holds, without the allocator's slack. */
  readonly heapMb: { first: number; last: number; max: number; slopeMbPerHour: number };
  readonly openFiles: { first: number; last: number; max: number; slopePerHour: number };
}

/** Herald's V8 heap in use, in MB, from its /metrics; undefined when it does not answer within a second. */
export async function heapUsedMb(port: number): Promise<number | undefined> {
  const read = await readMetrics(port, { heap: 'nodejs_heap_size_used_bytes' }, 1_000);
  return read && read.heap / 2 ** 20;
}

/** Resident memory, V8 heap and open files: first, last, highest and the slope per hour after the warm-up. */
export function memoryOf(
  samples: readonly MemorySample[],
  minutes: number,
): { figures: MemoryFigures; violations: string[] } {
  // The first third (at least a minute) is warm-up: connections, caches and JIT fill up.
  const warm = samples.filter((sample) => sample.t >= Math.max(60_000, (minutes * 60_000) / 3));
  const rss = samples.map((sample) => sample.rss);
  const fds = samples.map((sample) => sample.fds);
  const round = (value: number) => Math.round(value * 10) / 10;
  const rssSlope = slope(warm.map((sample) => [sample.t / 3_600_000, sample.rss]));
  const heaps = samples.flatMap((sample) => (sample.heap === undefined ? [] : [sample.heap]));
  const heapSlope = slope(
    warm.flatMap((sample) =>
      sample.heap === undefined ? [] : [[sample.t / 3_600_000, sample.heap] as const],
    ),
  );
  const fdSlope = slope(warm.map((sample) => [sample.t / 3_600_000, sample.fds]));
  const violations: string[] = [];
  // Flat means no growth beyond noise: a leaked socket per utterance or per fault would add hundreds. Judged on the
  // median of the warm-up's first fifth against its last fifth: one sample is noise (a run at cc9f5b3 began its
  // warm window in a dip of 25 while sessions ended, and its usual 175-192 then read as growth from 147).
  const warmFds = warm.map((sample) => sample.fds);
  const fifth = Math.max(1, Math.floor(warmFds.length / 5));
  const [early, late] = [median(warmFds.slice(0, fifth)), median(warmFds.slice(-fifth))];
  if (early !== undefined && late !== undefined && late > early + 40) {
    violations.push(
      `open files grew from ${early} to ${late} after the warm-up (medians of its first and last fifth)`,
    );
  }
  // A leak raises what the heap keeps after each collection: compare its floor over the last third of the run
  // with the middle third's. RSS is reported, not judged: the allocator returns memory to the kernel when it
  // pleases (an hour's run went 171 → 320 → 227 MB with no growth of the heap floor).
  const floor = (from: number, to: number): number | undefined => {
    const values = samples.flatMap((sample) =>
      sample.heap !== undefined && sample.t >= from && sample.t < to ? [sample.heap] : [],
    );
    return values.length > 0 ? Math.min(...values) : undefined;
  };
  const runMs = minutes * 60_000;
  const middleFloor = floor(runMs / 3, (2 * runMs) / 3);
  const lastFloor = floor((2 * runMs) / 3, Number.POSITIVE_INFINITY);
  if (minutes >= 20 && middleFloor !== undefined && lastFloor !== undefined && lastFloor > middleFloor + 20) {
    violations.push(
      `the heap Herald keeps after collections grew from ${round(middleFloor)} MB to ${round(lastFloor)} MB over the run's last two thirds`,
    );
  }
  return {
    figures: {
      rssMb: {
        first: round(rss[0] ?? 0),
        last: round(rss.at(-1) ?? 0),
        max: round(Math.max(0, ...rss)),
        slopeMbPerHour: round(rssSlope),
      },
      heapMb: {
        first: round(heaps[0] ?? 0),
        last: round(heaps.at(-1) ?? 0),
        max: round(Math.max(0, ...heaps)),
        slopeMbPerHour: round(heapSlope),
      },
      openFiles: {
        first: fds[0] ?? 0,
        last: fds.at(-1) ?? 0,
        max: Math.max(0, ...fds),
        slopePerHour: round(fdSlope),
      },
    },
    violations,
  };
}
