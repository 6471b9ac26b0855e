import { analyse, decodeOpus, packetDurationMs, type Segment } from '../support/audio.ts';
import type { CapturedFrame } from './voice.ts';

/** What the members made of a burst: frames sent, end-to-end encrypted, and decrypted per listener. */
export interface Hearing {
  /** Non-silence frames the bot sent. */
  sent: number;
  /** Of those, frames carrying DAVE end-to-end encryption. */
  e2ee: number;
  /** Non-silence frames sent without E2EE while DAVE was negotiated. */
  plainUnderDave: number;
  /** Per listener (member id): non-silence frames it decrypted, and its failures by davey error kind. */
  listeners: Record<string, { decrypted: number; failed: Record<string, number> }>;
}

/** What was heard in one burst of audio, decoded and measured. */
export interface Heard {
  /**
   * The Opus frames the members heard (decrypted by a listener), in arrival order, without the trailing silence
   * frames the library appends. Frames no listener could decrypt are not in it.
   */
  frames: Buffer[];
  /** Frames sent, E2EE frames and frames decrypted per listener, over the whole burst. */
  hearing: Hearing;
  /** `performance.now()` arrival time of each of `frames`. */
  receivedAt: number[];
  /** Length of the decoded timeline, in ms (reception gaps longer than 60 ms are rendered as silence). */
  durationMs: number;
  /** How much of it was sound. */
  soundMs: number;
  segments: Segment[];
  /** Silences between sounding segments, in ms. */
  gapsMs: number[];
  /** Arrival intervals between consecutive frames. */
  intervals: { meanMs: number; p99Ms: number; count: number };
}

/** What the bot played in one guild, across reconnects. */
export interface VoiceCapture {
  /** Decrypted frames in arrival order; silence frames `F8 FF FE` are kept and flagged. */
  readonly frames: readonly CapturedFrame[];
  /** SPEAKING updates from the bot (op 5), with `performance.now()` times. */
  readonly speaking: readonly { speaking: number; at: number }[];
  /** A voice websocket is open and a session description was sent (or it resumed). */
  readonly connected: boolean;
  /** Resolves once `connected` is true. @throws on timeout (default 10 s). */
  untilConnected(o?: { timeoutMs?: number }): Promise<void>;
  /** Resolves once `connected` is false. @throws on timeout (default 10 s). */
  untilDisconnected(o?: { timeoutMs?: number }): Promise<void>;
  /**
   * Resolves when audio has started and then no frame arrived for `quietMs` (default 600); returns everything
   * captured since the previous call. @throws on timeout (default 30 s).
   */
  untilSilent(o?: { quietMs?: number; timeoutMs?: number }): Promise<Heard>;
  /** Resolves when `count` non-silence frames (in total since the last clear) have arrived. */
  untilFrames(count: number, o?: { timeoutMs?: number }): Promise<void>;
  /** Forgets the captured frames and speaking updates. */
  clear(): void;
  /** Calls `listener` after every frame, speaking update and connection change; returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
}

/** The emulator-side half of a capture: where the voice server feeds frames and state in. */
export interface CaptureSink {
  readonly capture: VoiceCapture;
  push(frame: CapturedFrame): void;
  speaking(speaking: number): void;
  setConnected(connected: boolean): void;
  /** Rejects every pending wait (the emulator is closing). */
  dispose(): void;
}

// A receiver's jitter buffer plays a pause in arrival as silence; shorter irregularity is only jitter.
const RENDER_GAP_OVER_MS = 60;

/** Creates the capture of one guild. */
export function createCapture(): CaptureSink {
  const frames: CapturedFrame[] = [];
  const speaking: { speaking: number; at: number }[] = [];
  let connected = false;
  let cursor = 0;
  const listeners = new Set<() => void>();
  const disposers = new Set<(error: Error) => void>();

  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };

  /** Waits until `check()` is true, re-checking on every change; `check` may also arm its own timers. */
  const waitFor = <T>(
    what: string,
    timeoutMs: number,
    check: (done: (value: T) => void) => boolean | undefined,
    cleanup?: () => void,
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (error: Error | undefined, value?: T): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        listeners.delete(listener);
        disposers.delete(onDispose);
        cleanup?.();
        if (error) reject(error);
        else resolve(value as T);
      };
      const listener = (): void => {
        check((value) => finish(undefined, value));
      };
      const onDispose = (error: Error): void => finish(error);
      const timer = setTimeout(
        () => finish(new Error(`voice capture: timed out after ${timeoutMs} ms waiting for ${what}`)),
        timeoutMs,
      );
      listeners.add(listener);
      disposers.add(onDispose);
      listener();
    });

  const capture: VoiceCapture = {
    get frames() {
      return frames;
    },
    get speaking() {
      return speaking;
    },
    get connected() {
      return connected;
    },
    untilConnected: (o) =>
      waitFor<void>('a voice connection', o?.timeoutMs ?? 10_000, (done) => {
        if (connected) done();
        return connected;
      }),
    untilDisconnected: (o) =>
      waitFor<void>('the voice connection to close', o?.timeoutMs ?? 10_000, (done) => {
        if (!connected) done();
        return !connected;
      }),
    untilFrames: (count, o) =>
      waitFor<void>(`${count} audio frames`, o?.timeoutMs ?? 30_000, (done) => {
        const heard = frames.filter((f) => !f.silence).length >= count;
        if (heard) done();
        return heard;
      }),
    untilSilent: (o) => {
      const quietMs = o?.quietMs ?? 600;
      let quiet: NodeJS.Timeout | undefined;
      let seen = -1;
      return waitFor<Heard>(
        'audio followed by silence',
        o?.timeoutMs ?? 30_000,
        (done) => {
          const started = frames.slice(cursor).some((f) => !f.silence);
          if (!started || frames.length === seen) return false;
          // Every new frame restarts the quiet period: the burst ends only after quietMs with no arrival.
          seen = frames.length;
          clearTimeout(quiet);
          quiet = setTimeout(() => {
            const burst = frames.slice(cursor);
            cursor = frames.length;
            const heard = hear(burst);
            console.log(`voice capture: ${describeHearing(heard.hearing)}`);
            done(heard);
          }, quietMs);
          return false;
        },
        () => clearTimeout(quiet),
      );
    },
    clear: () => {
      frames.length = 0;
      speaking.length = 0;
      cursor = 0;
    },
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };

  return {
    capture,
    push: (frame) => {
      frames.push(frame);
      notify();
    },
    speaking: (value) => {
      speaking.push({ speaking: value, at: performance.now() });
      notify();
    },
    setConnected: (value) => {
      connected = value;
      notify();
    },
    dispose: () => {
      for (const dispose of [...disposers]) dispose(new Error('voice capture: the emulator closed'));
    },
  };
}

/**
 * The frames of silence between the first and the last sound of `frames` (silence the bot sent inside the words,
 * because its audio was late), and the gaps they made: runs of them, each followed by sound.
 */
export function silenceInsideWords(frames: readonly CapturedFrame[]): { frames: number; gaps: number } {
  const first = frames.findIndex((frame) => !frame.silence);
  const last = frames.findLastIndex((frame) => !frame.silence);
  const words = first < 0 ? [] : frames.slice(first, last + 1);
  return {
    frames: words.filter((frame) => frame.silence).length,
    gaps: words.filter((frame, i) => i > 0 && !frame.silence && words[i - 1]?.silence).length,
  };
}

/** Counts, over `frames`, what was sent, end-to-end encrypted, and decrypted by each listener. */
export function hearingOf(frames: readonly CapturedFrame[]): Hearing {
  const sound = frames.filter((f) => !f.silence);
  const listeners: Hearing['listeners'] = {};
  for (const frame of sound) {
    for (const [userId, result] of frame.listeners) {
      const entry = listeners[userId] ?? { decrypted: 0, failed: {} };
      listeners[userId] = entry;
      if (result.ok) entry.decrypted += 1;
      else entry.failed[result.error] = (entry.failed[result.error] ?? 0) + 1;
    }
  }
  return {
    sent: sound.length,
    e2ee: sound.filter((f) => f.e2ee).length,
    plainUnderDave: sound.filter((f) => f.dave && !f.e2ee).length,
    listeners,
  };
}

/** One line for a test's output: frames sent, E2EE frames, frames decrypted per listener. */
export function describeHearing(h: Hearing): string {
  const per = Object.entries(h.listeners).map(([userId, l]) => {
    const failed = Object.entries(l.failed).map(([kind, n]) => `${n} ${kind}`);
    return `${userId.slice(-4)}: ${l.decrypted}${failed.length > 0 ? ` (failed ${failed.join(', ')})` : ''}`;
  });
  return `frames sent ${h.sent}, E2EE ${h.e2ee}, decrypted per listener {${per.join('; ')}}`;
}

/** A frame some member heard: decrypted by a listener (or, without DAVE, played as it came). */
const audible = (frame: CapturedFrame): boolean => [...frame.listeners.values()].some((r) => r.ok);

/** Decodes and measures what the members heard of a burst (pure apart from the Opus decoder). */
export function hear(burst: readonly CapturedFrame[]): Heard {
  const hearing = hearingOf(burst);
  let end = burst.length;
  while (end > 0 && burst[end - 1]?.silence) end -= 1;
  const kept = burst.slice(0, end).filter(audible);
  const frames = kept.map((f) => f.opus);
  const receivedAt = kept.map((f) => f.receivedAt);
  // Runs of frames without a pause decode with one decoder; a pause becomes silence between runs.
  const pieces: Int16Array[] = [];
  let run: Buffer[] = [];
  kept.forEach((frame, i) => {
    const previous = kept[i - 1];
    if (previous) {
      const pauseMs = frame.receivedAt - previous.receivedAt - packetDurationMs(previous.opus);
      if (pauseMs > RENDER_GAP_OVER_MS) {
        pieces.push(decodeOpus(run), new Int16Array(Math.round(pauseMs * 48)));
        run = [];
      }
    }
    run.push(frame.opus);
  });
  pieces.push(decodeOpus(run));
  const pcm = new Int16Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const piece of pieces) {
    pcm.set(piece, at);
    at += piece.length;
  }
  const analysis = analyse(pcm);
  return {
    frames,
    hearing,
    receivedAt,
    durationMs: analysis.durationMs,
    soundMs: analysis.soundMs,
    segments: analysis.segments,
    gapsMs: analysis.gapsMs,
    intervals: intervalStats(receivedAt),
  };
}

/** Mean and 99th-percentile of the differences between consecutive times. */
export function intervalStats(times: readonly number[]): { meanMs: number; p99Ms: number; count: number } {
  const diffs = times.slice(1).map((t, i) => t - (times[i] ?? t));
  if (diffs.length === 0) return { meanMs: 0, p99Ms: 0, count: 0 };
  const sorted = [...diffs].sort((a, b) => a - b);
  const p99 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0;
  return { meanMs: diffs.reduce((s, d) => s + d, 0) / diffs.length, p99Ms: p99, count: diffs.length };
}
