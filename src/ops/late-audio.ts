import type { Logger } from '../log.ts';
import type { OpsEvents } from './events.ts';

/** Options of {@link warnOfLateAudio}. */
export interface LateAudioOptions {
  /** At most one warning in this long; default {@link LATE_AUDIO_WARN_EVERY_MS}. */
  readonly everyMs?: number;
  /** The clock, in ms; default `Date.now`. */
  readonly now?: () => number;
}

/** One warning of late audio in ten minutes at most: a slow service touches every utterance, the log must not. */
export const LATE_AUDIO_WARN_EVERY_MS = 600_000;

/**
 * `events`, and a warning on `logger` when speech audio came slower than it plays: an utterance held at its start
 * (its audio came slower than real time) or a gap inside the words (its audio ran out). Members then wait or hear a
 * pause, and the cause is the TTS service or the network to it, which the operator, not Herald, can change; the
 * metrics count both, and this puts it where an operator reads words, not graphs (the log, the status page's latest
 * warnings). The first occurrence warns at once; later ones at most once per `everyMs`, with what happened since.
 */
export function warnOfLateAudio(
  events: OpsEvents,
  logger: Logger,
  options: LateAudioOptions = {},
): OpsEvents {
  const everyMs = options.everyMs ?? LATE_AUDIO_WARN_EVERY_MS;
  const now = options.now ?? Date.now;
  let warnedAt: number | undefined;
  let slowStarts = 0;
  let gaps = 0;

  const occurred = (): void => {
    const at = now();
    if (warnedAt !== undefined && at - warnedAt < everyMs) return;
    const since =
      warnedAt === undefined ? '' : ` in the last ${Math.round((at - warnedAt) / 60_000)} minutes`;
    logger.warn(
      `Speech audio came slower than it plays${since}: ${count(slowStarts, 'utterance')} waited to start, ${count(gaps, 'pause')} inside the words. The TTS service (or the network to it) is streaming slower than real time.`,
      { slowStarts, gaps },
    );
    warnedAt = at;
    slowStarts = 0;
    gaps = 0;
  };

  return {
    ...events,
    voiceSlowStart() {
      events.voiceSlowStart();
      slowStarts++;
      occurred();
    },
    voiceGap() {
      events.voiceGap();
      gaps++;
      occurred();
    },
  };
}

const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
