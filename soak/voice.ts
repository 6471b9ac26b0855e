/** What Herald's /metrics say of its voice at the end of a soak. */
import { readMetrics } from './metrics.ts';

const COUNTERS = {
  /** Voice packets sent. */
  packets: 'herald_voice_packets_total',
  /** Of those, sent more than a frame after the one before. */
  latePackets: 'herald_voice_late_packets_total',
  /** Frames of silence sent inside an utterance because its audio had not arrived: gaps heard in the words. */
  starvedFrames: 'herald_voice_starved_frames_total',
  /** Times the audio ran out inside an utterance's words, however many frames each lasted. */
  gaps: 'herald_voice_gaps_total',
  /** Utterances held at their start because their audio came slower than real time. */
  slowStarts: 'herald_voice_slow_starts_total',
} as const;

/** Herald's voice counters, by the keys of {@link COUNTERS}. */
export type VoiceFigures = Readonly<Record<keyof typeof COUNTERS, number>>;

/** Herald's voice counters (a sharding manager sums its shards'); undefined when it does not answer within 5 s. */
export function voiceFigures(port: number): Promise<VoiceFigures | undefined> {
  return readMetrics(port, COUNTERS, 5_000);
}
