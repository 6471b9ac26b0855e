/** What Herald's /metrics say of its voice at the end of a soak. */
export interface VoiceFigures {
  /** Voice packets sent. */
  readonly packets: number;
  /** Of those, sent more than a frame after the one before. */
  readonly latePackets: number;
  /** Frames of silence sent inside an utterance because its audio had not arrived: gaps heard in the words. */
  readonly starvedFrames: number;
  /** Utterances held at their start because their audio came slower than real time. */
  readonly slowStarts: number;
}

const COUNTERS = {
  packets: 'herald_voice_packets_total',
  latePackets: 'herald_voice_late_packets_total',
  starvedFrames: 'herald_voice_starved_frames_total',
  slowStarts: 'herald_voice_slow_starts_total',
} as const;

/** Herald's voice counters (a sharding manager sums its shards'); undefined when it does not answer within 5 s. */
export async function voiceFigures(port: number): Promise<VoiceFigures | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
    const text = await response.text();
    const read = (name: string): number =>
      Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    const figures = Object.fromEntries(
      Object.entries(COUNTERS).map(([key, name]) => [key, read(name)]),
    ) as unknown as VoiceFigures;
    return Object.values(figures).every(Number.isFinite) ? figures : undefined;
  } catch {
    return undefined;
  }
}
