import type { Readable } from 'node:stream';
import { AudioResource } from '@discordjs/voice';
import prism from 'prism-media';
import { type Logger, silentLogger } from '../log.ts';
import { AudioFormatError } from './errors.ts';
import { readOggOpusPackets } from './packet-stream.ts';
import { createStartHoldStream, type StartHoldOptions } from './start-hold.ts';
import { createWavToPcm } from './wav.ts';

/** The audio formats the TTS service sends: Ogg Opus, or RIFF PCM WAV. */
export type SpeechFormat = 'opus' | 'wav';

/** Options of {@link createSpeechResource}. */
export interface SpeechResourceOptions<T> {
  /** The container of `audio`: decides the pipeline. */
  readonly format: SpeechFormat;
  /** Attached to the resource as `resource.metadata`. */
  readonly metadata: T;
  /** Receives the pipeline's debug lines. */
  readonly logger?: Logger;
  /** Frames of silence after the audio; default {@link STOP_SILENCE_FRAMES}. */
  readonly trailingSilenceFrames?: number;
  /** The audio’s length as the service announced it: audio from a service slower than real time waits to start
   *  until it can play to the end without a gap (`durationMs` of StartHoldOptions, src/audio/start-hold.ts). */
  readonly durationMs?: number;
  /** When the audio's byte at `offset` arrived (`performance.now()`; a ReadAhead's `arrivedAt`): the pace of the
   *  start is judged from that, so a backlog received before playing is not taken for a fast service. */
  readonly arrivedAt?: (offset: number) => number | undefined;
  /** Told when audio from a service slower than real time was held to play through (`onSlowStart` of
   *  StartHoldOptions). */
  readonly onSlowStart?: (heldMs: number, pace: number) => void;
}

/**
 * Frames of silence after the end when transmission stops (Discord asks for five, and @discordjs/voice sends them
 * by default), so the listeners' decoders do not interpolate into whatever comes next.
 */
export const STOP_SILENCE_FRAMES = 5;

/** Turns a TTS audio body into an @discordjs/voice AudioResource, streaming: Ogg → readOggOpusPackets → Opus
 * packets; WAV → createWavToPcm → prism's Opus encoder → createStartHoldStream. Either way the first packets are held
 * until the player can start on them without running dry, and held again when it ran dry all the same
 * (src/audio/start-hold.ts). No FFmpeg, no child process.
 * An error on the input (e.g. a TTS timeout) destroys the play stream, which ends the resource.
 * @throws AudioFormatError (`ERR_UNKNOWN_FORMAT`) for a format other than 'opus' or 'wav', before playing. */
export function createSpeechResource<T>(audio: Readable, o: SpeechResourceOptions<T>): AudioResource<T> {
  const logger = o.logger ?? silentLogger;
  const startHold: StartHoldOptions = {
    logger,
    startFrames: START_FRAMES,
    slowStartFrames: SLOW_START_FRAMES,
    maxRebufferFrames: MAX_REBUFFER_FRAMES,
    ...(o.durationMs === undefined ? {} : { durationMs: o.durationMs }),
    ...(o.onSlowStart === undefined ? {} : { onSlowStart: o.onSlowStart }),
  };
  // The resource is built directly rather than through createAudioResource: finding a pipeline there probes
  // for FFmpeg with a synchronous `ffmpeg -h` child process on first use, which these inputs never need.
  switch (o.format) {
    case 'opus':
      // One stream that reads its packets from `audio` as the player takes them, rather than `audio` piped into a
      // Transform: the pipe and the Transform's writable side cost about as much as demuxing (`npm run bench:demux`).
      return new AudioResource<T>(
        [],
        [
          readOggOpusPackets(audio, {
            ...startHold,
            ...(o.arrivedAt === undefined ? {} : { arrivedAt: o.arrivedAt }),
          }),
        ],
        o.metadata,
        o.trailingSilenceFrames ?? STOP_SILENCE_FRAMES,
      );
    case 'wav': {
      // Where the samples start in the body, and how many of its bytes make a millisecond, once the header is read.
      let data: { readonly start: number; readonly bytesPerMs: number } | undefined;
      return new AudioResource<T>(
        [],
        [
          audio,
          createWavToPcm({ logger, onData: (start, bytesPerMs) => (data = { start, bytesPerMs }) }),
          // The same encoder @discordjs/voice puts on its Raw → Opus edge; the resource exposes it as `encoder`.
          new prism.opus.Encoder({ rate: 48_000, channels: 2, frameSize: 960 }),
          createStartHoldStream({
            ...startHold,
            // The 20 ms packet at `index` is made of the samples up to (index + 1) × 20 ms into the data.
            arrivedAt: (index) =>
              data === undefined
                ? undefined
                : o.arrivedAt?.(data.start + Math.ceil((index + 1) * 20 * data.bytesPerMs) - 1),
          }),
        ],
        o.metadata,
        o.trailingSilenceFrames ?? STOP_SILENCE_FRAMES,
      );
    }
    default:
      audio.destroy();
      throw new AudioFormatError(
        'ERR_UNKNOWN_FORMAT',
        `Unknown audio format ${JSON.stringify(o.format satisfies never)}: expected 'opus' or 'wav'`,
      );
  }
}

/**
 * Frames an Ogg Opus resource holds before the player can start it, from a service at twice real time or faster:
 * the first and two ahead (see `startFrames` of StartHoldOptions). With three ready, the player sends the
 * first at once (patch 003), so such a service starts no later than before.
 */
export const START_FRAMES = 3;

/**
 * Frames held instead when the first three came slower than twice real time (`slowStartFrames`): the player reads
 * each frame a cycle before it sends it and sends the first at once, so from a service at real time three would
 * leave it only 0–20 ms ahead of the service, and a frame of silence fell in the first utterance's words in one
 * `npm run bench` P3 in three. Five leave it 40–60 ms ahead, for 40 ms more before the first word.
 */
export const SLOW_START_FRAMES = 5;

/**
 * The most frames held again when the player ran dry inside the audio (`maxRebufferFrames`): 3 s, one pause that
 * long at most before the words go on, well below the missed frames after which the session's player gives an
 * utterance up (15 s). A service slower than that falls behind again and is held again.
 */
export const MAX_REBUFFER_FRAMES = 150;

/**
 * Changes how many frames of silence end `resource`: fewer than {@link STOP_SILENCE_FRAMES} once the utterance
 * after it is ready to follow at once. Takes effect if called before its audio runs out (the player reads the
 * count then). `silencePaddingFrames` is a public field of @discordjs/voice's AudioResource, typed read-only there.
 */
export function setTrailingSilence(resource: AudioResource<unknown>, frames: number): void {
  (resource as { silencePaddingFrames: number }).silencePaddingFrames = frames;
}
