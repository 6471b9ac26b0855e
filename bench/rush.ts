/**
 * The rush in figures (issue 44): lateness per second of a P4 step, the rush's seconds apart from the steady ones,
 * and the start latency (`/speak` → first packet). Pure: the step hands it what it timed.
 */

/** `value` to `digits` decimals, never -0 (as bench/common.ts's; this file imports nothing, so options.ts may use its types). */
function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor + 0;
}

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

/** One server's stream as a P4 step timed it: when its member asked (seconds since the step began), and its packets. */
export interface StreamTiming {
  readonly askedAtSeconds: number;
  /** In arrival order; empty when nothing arrived. */
  readonly packets: readonly TimedPacket[];
}

/** A P4 step's rush in figures: every second, the rush and the steady part, the worst second, the start latency. */
export interface RushFigures {
  readonly bySecond: readonly SecondFigures[];
  readonly rush: Stretch;
  readonly steady: Stretch;
  /** The second with the largest share of late packets (the first such; second 0 with 0 % when none was late). */
  readonly worstSecond: SecondFigures;
  /** `/speak` sent → that server's first packet, ms, over the servers heard. */
  readonly startLatencyMs: ReturnType<typeof startLatency>;
}

/** {@link perSecond}, {@link rushAndSteady} and {@link startLatency} over a step's streams. */
export function rushFigures(streams: readonly StreamTiming[]): RushFigures {
  const all: TimedPacket[] = [];
  const startsAt: number[] = [];
  const endsAt: number[] = [];
  const latencies: number[] = [];
  for (const stream of streams) {
    const first = stream.packets[0];
    const last = stream.packets.at(-1);
    if (!first || !last) continue;
    for (const packet of stream.packets) all.push(packet);
    startsAt.push(first.atSeconds);
    endsAt.push(last.atSeconds);
    latencies.push((first.atSeconds - stream.askedAtSeconds) * 1000);
  }
  const bySecond = perSecond(all);
  const worstSecond = bySecond.reduce<SecondFigures>(
    (worst, s) => (s.latePercent > worst.latePercent ? s : worst),
    bySecond[0] ?? { second: 0, packets: 0, latePercent: 0, maxLatenessMs: 0 },
  );
  return {
    bySecond,
    ...rushAndSteady(bySecond, startsAt, endsAt),
    worstSecond,
    startLatencyMs: startLatency(latencies),
  };
}

/** The rush in one line: the rush and steady stretches, the worst second and the start latency. */
export function rushLine(figures: RushFigures): string {
  const stretch = (s: Stretch) => `${s.latePercent} % of ${s.packets} late (max ${s.maxLatenessMs} ms)`;
  const { p50, p95, max, n } = figures.startLatencyMs;
  return `rush seconds ${stretch(figures.rush)}, steady seconds ${stretch(figures.steady)}; worst second ${figures.worstSecond.second}: ${figures.worstSecond.latePercent} %; /speak → first packet p50 ${p50}, p95 ${p95}, max ${max} ms (n=${n})`;
}

/** Every second as `second: packets, late %, max lateness`, one per line, for the table. */
export function secondsTable(seconds: readonly SecondFigures[]): string[] {
  return seconds.map(
    (s) =>
      `${String(s.second).padStart(3)} s: ${s.packets} packets, ${s.latePercent} % late, max ${s.maxLatenessMs} ms`,
  );
}

/** The start latency's two parts in one line (see ConcurrencyStep.startSplit in options.ts). */
export function splitLine(split: {
  readonly toTtsRequestMs: ReturnType<typeof startLatency>;
  readonly ttsRequestToFirstPacketMs: ReturnType<typeof startLatency>;
}): string {
  const part = ({ p50, p95, max }: ReturnType<typeof startLatency>) =>
    `p50 ${p50}, p95 ${p95}, max ${max} ms`;
  return `/speak → TTS request ${part(split.toTtsRequestMs)}; TTS request → first packet ${part(split.ttsRequestToFirstPacketMs)}`;
}

/**
 * The whole seconds of a step in which every heard stream was playing: from the first second that began after the
 * last stream's first packet to the last that ended before the first stream's last packet. Empty when no second was
 * (a rush whose starts run past the first end). Seconds are counted from the step's beginning, as `atSeconds`.
 */
export function allPlayingSeconds(streams: readonly StreamTiming[]): number[] {
  let lastStart = Number.NEGATIVE_INFINITY;
  let firstEnd = Number.POSITIVE_INFINITY;
  for (const { packets } of streams) {
    const first = packets[0];
    const last = packets.at(-1);
    if (!first || !last) continue;
    lastStart = Math.max(lastStart, first.atSeconds);
    firstEnd = Math.min(firstEnd, last.atSeconds);
  }
  const seconds: number[] = [];
  if (lastStart === Number.NEGATIVE_INFINITY) return seconds;
  for (let second = Math.max(0, Math.ceil(lastStart)); second + 1 <= firstEnd; second++) seconds.push(second);
  return seconds;
}

/**
 * What each utterance cost Herald beyond playing its audio (its interaction, reservation, download, demuxer and
 * player, and its end), in CPU ms: the step's CPU less what its audio would have cost at the steady rate (the seconds
 * in which every stream played: see {@link allPlayingSeconds}). Null without a steady rate or an utterance.
 */
export function cpuMsPerUtterance(step: {
  readonly cpuMs: number;
  readonly streamedSeconds: number;
  readonly steadyCpuMsPerStreamSecond: number | null;
  readonly utterances: number;
}): number | null {
  if (step.steadyCpuMsPerStreamSecond === null || step.utterances === 0) return null;
  const playing = step.steadyCpuMsPerStreamSecond * step.streamedSeconds;
  return round(Math.max(0, step.cpuMs - playing) / step.utterances, 2);
}
