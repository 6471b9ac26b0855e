/**
 * The rush in figures (issue 44): lateness per second of a P4 step, the rush's seconds apart from the steady ones,
 * and the start latency (`/speak` → first packet). Pure: the step hands it what it timed.
 */
import { round } from './common.ts';

/** A packet is late when it arrives more than this after its slot (its stream's RTP timestamp). */
export const LATE_MS = 40;

/** One packet as timed: seconds since the step began, and how late it came (ms; negative: early). */
export interface TimedPacket {
  readonly atSeconds: number;
  readonly latenessMs: number;
}

/** The packets of one whole second of the step. */
export interface SecondFigures {
  readonly second: number;
  readonly packets: number;
  /** Percent of this second's packets more than {@link LATE_MS} late. */
  readonly latePercent: number;
  readonly maxLatenessMs: number;
}

/** Per-second figures, one entry for every second from 0 to the last packet's (empty seconds show 0 packets). */
export function perSecond(packets: readonly TimedPacket[]): SecondFigures[] {
  const seconds: { packets: number; late: number; max: number }[] = [];
  for (const { atSeconds, latenessMs } of packets) {
    const second = Math.max(0, Math.floor(atSeconds));
    while (seconds.length <= second) seconds.push({ packets: 0, late: 0, max: 0 });
    const bucket = seconds[second] as { packets: number; late: number; max: number };
    bucket.packets += 1;
    if (latenessMs > LATE_MS) bucket.late += 1;
    bucket.max = Math.max(bucket.max, latenessMs);
  }
  return seconds.map((bucket, second) => ({
    second,
    packets: bucket.packets,
    latePercent: bucket.packets === 0 ? 0 : round((100 * bucket.late) / bucket.packets, 2),
    maxLatenessMs: round(bucket.max, 1),
  }));
}

/** A stretch of seconds summed up. */
export interface Stretch {
  readonly packets: number;
  readonly latePercent: number;
  readonly maxLatenessMs: number;
}

/**
 * The rush (every second in which a stream started or ended) apart from the steady seconds (all playing).
 * `startsAt`/`endsAt`: seconds since the step began at which each stream's first/last packet came.
 */
export function rushAndSteady(
  seconds: readonly SecondFigures[],
  startsAt: readonly number[],
  endsAt: readonly number[],
): { rush: Stretch; steady: Stretch } {
  const rushSeconds = new Set([...startsAt, ...endsAt].map((at) => Math.max(0, Math.floor(at))));
  const sum = (chosen: readonly SecondFigures[]): Stretch => {
    const packets = chosen.reduce((total, s) => total + s.packets, 0);
    const late = chosen.reduce((total, s) => total + (s.latePercent / 100) * s.packets, 0);
    return {
      packets,
      latePercent: packets === 0 ? 0 : round((100 * late) / packets, 2),
      maxLatenessMs: chosen.reduce((max, s) => Math.max(max, s.maxLatenessMs), 0),
    };
  };
  return {
    rush: sum(seconds.filter((s) => rushSeconds.has(s.second))),
    steady: sum(seconds.filter((s) => !rushSeconds.has(s.second))),
  };
}

/** `/speak` → first packet, in ms: p50, p95 and max (nearest rank; all 0 when there is none). */
export function startLatency(values: readonly number[]): {
  p50: number;
  p95: number;
  max: number;
  n: number;
} {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => round(sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? 0, 1);
  return { p50: at(0.5), p95: at(0.95), max: round(sorted.at(-1) ?? 0, 1), n: sorted.length };
}
