import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.ts';
import type { GenerateResult } from '../../src/tts/index.ts';
import { createSynthesisPacing, type SynthesisPacing } from '../../src/voice/pacing.ts';
import {
  type DropReason,
  type Prepared,
  SpeechQueue,
  type SpeechRequest,
  type Utterance,
} from '../../src/voice/queue.ts';
import { QueuedTally } from '../../src/voice/queued-tally.ts';

const silentLogger = createLogger({ level: 'error', write: () => {} });
const SPEAKER = { id: 's', name: 'Voice', voiceKey: 's', gender: null, languages: null };

/** A synthesis the test resolves by hand; its audio is a stream the test can write to or break. */
interface Pending {
  readonly request: SpeechRequest;
  readonly signal: AbortSignal;
  readonly audio: PassThrough;
  resolve(durationS?: number): void;
  reject(error: unknown): void;
}

function harness(
  options: {
    perServer?: number;
    perMember?: number;
    pacing?: SynthesisPacing;
    /** False: the player does not report that it started (it waits for frames) until the test calls started(). */
    startsAtOnce?: boolean;
    /** The server, and the process's tally it counts in (shared by the servers of a test). */
    guildId?: string;
    tally?: QueuedTally;
  } = {},
) {
  const tally = options.tally ?? new QueuedTally();
  const pending: Pending[] = [];
  const played: Utterance[] = [];
  const unplayed: { text: string; reason: DropReason }[] = [];
  const failures: { text: string; error: unknown }[] = [];
  let stops = 0;
  let position = 0;
  let nextReady = 0;
  const queue: SpeechQueue = new SpeechQueue({
    guildId: options.guildId ?? 'g',
    tally,
    logger: silentLogger,
    limits: { perServer: options.perServer ?? 50, perMember: options.perMember ?? 10 },
    pacing: options.pacing ?? { record: () => {}, leadMs: () => 500 },
    synthesize: (request, signal) =>
      new Promise<GenerateResult>((resolve, reject) => {
        const audio = new PassThrough();
        let answered = false;
        pending.push({
          request,
          signal,
          audio,
          resolve: (durationS) => {
            answered = true;
            resolve({
              audio,
              contentType: 'audio/ogg',
              format: 'opus',
              sampleRate: 48_000,
              durationS,
              costUsd: 0.001,
              balanceUsd: 1,
              requestId: undefined,
              attempts: 1,
            });
          },
          reject,
        });
        // As the TTS client does: an abort before the headers rejects; after them, it breaks the body.
        signal.addEventListener(
          'abort',
          () => (answered ? audio.destroy(new Error('aborted')) : reject(new Error('aborted'))),
          { once: true },
        );
      }),
    play: (utterance: Utterance, _prepared: Prepared) => {
      played.push(utterance);
      // The player reports back at once that it is playing.
      if (options.startsAtOnce !== false) queueMicrotask(() => queue.started(utterance, () => position));
    },
    stopPlayback: () => {
      stops += 1;
      const playing = played.at(-1);
      if (playing) queueMicrotask(() => queue.finished(playing));
    },
    onUnplayed: (_result, request, reason) => unplayed.push({ text: request.text, reason }),
    onNextReady: () => {
      nextReady += 1;
    },
  });
  const say = (text: string, userId = 'u1') =>
    queue.enqueue({
      text,
      speaker: SPEAKER,
      requestedBy: { id: userId, name: userId },
      key: text,
      onFailure: (error) => failures.push({ text, error }),
    });
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    queue,
    tally,
    say,
    pending,
    played,
    unplayed,
    failures,
    flush,
    stops: () => stops,
    nextReady: () => nextReady,
    setPosition: (ms: number) => {
      position = ms;
    },
    texts: () => pending.map((p) => p.request.text),
  };
}

describe('SpeechQueue: paying as late as gapless playback allows', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('synthesises nothing until the connection can play', async () => {
    const h = harness();
    h.say('one');
    h.say('two');
    await h.flush();
    expect(h.pending).toHaveLength(0);
    h.queue.setCanPlay(true);
    await h.flush();
    expect(h.texts()).toEqual(['one']);
  });

  it('synthesises the next only when the one playing is within the lead of its end, never two ahead', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    for (const text of ['one', 'two', 'three']) h.say(text);
    await h.flush();
    h.pending[0]?.resolve(2); // two seconds of audio
    await h.flush();
    expect(h.played.map((u) => u.request.text)).toEqual(['one']);
    expect(h.texts()).toEqual(['one']);
    // 2,000 ms long, 500 ms lead: the second is due 1,500 ms in.
    h.setPosition(1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.texts()).toEqual(['one']);
    h.setPosition(1_500);
    await vi.advanceTimersByTimeAsync(600);
    expect(h.texts()).toEqual(['one', 'two']);
    // The third waits for the second to play, however long that takes.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(h.texts()).toEqual(['one', 'two']);
    h.pending[1]?.resolve(2);
    h.queue.finished(h.played[0] as Utterance);
    await h.flush();
    expect(h.played.map((u) => u.request.text)).toEqual(['one', 'two']);
  });

  it('pays for the next only once the player has started the one handed to it, not while it waits for frames', async () => {
    const h = harness({ startsAtOnce: false });
    h.queue.setCanPlay(true);
    h.say('one');
    await h.flush();
    h.pending[0]?.resolve(2);
    await h.flush();
    expect(h.played.map((u) => u.request.text)).toEqual(['one']);
    // Queued while 'one' waits for its first frames: nothing to count its end from yet.
    h.say('two');
    h.say('three');
    await h.flush();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.texts()).toEqual(['one']);
    // Started, and already within the lead of its end (2,000 ms long, 500 ms lead).
    h.queue.started(h.played[0] as Utterance, () => 1_600);
    await h.flush();
    expect(h.texts()).toEqual(['one', 'two']);
  });

  it('draining (a graceful stop): plays out what is paid for, pays for nothing more, keeps the rest', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    for (const text of ['one', 'two', 'three', 'four']) h.say(text);
    await h.flush();
    h.pending[0]?.resolve(2);
    await h.flush();
    h.setPosition(1_600);
    await vi.advanceTimersByTimeAsync(1_600);
    expect(h.texts()).toEqual(['one', 'two']); // 'two' is paid for, ahead
    let drained = false;
    void h.queue.drain().then(() => {
      drained = true;
    });
    await h.flush();
    expect(drained).toBe(false);
    // 'one' ends; the paid 'two' plays; nothing more is synthesised, whatever the position.
    h.pending[1]?.resolve(2);
    h.queue.finished(h.played[0] as Utterance);
    await h.flush();
    expect(h.played.map((u) => u.request.text)).toEqual(['one', 'two']);
    h.setPosition(1_900);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(h.texts()).toEqual(['one', 'two']);
    expect(drained).toBe(false);
    h.queue.finished(h.played[1] as Utterance);
    await h.flush();
    expect(drained).toBe(true);
    expect(h.texts()).toEqual(['one', 'two']);
    expect(h.queue.unheard().map((r) => r.text)).toEqual(['three', 'four']);
    expect(h.unplayed).toEqual([]);
  });

  it('draining with nothing paid resolves at once and keeps everything', async () => {
    const h = harness();
    for (const text of ['one', 'two']) h.say(text);
    await h.queue.drain();
    expect(h.pending).toHaveLength(0);
    expect(h.queue.unheard().map((r) => r.text)).toEqual(['one', 'two']);
  });

  it('says when the next is ready while one plays (so the one playing may end without trailing silence)', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    for (const text of ['one', 'two']) h.say(text);
    await h.flush();
    h.pending[0]?.resolve(2);
    await h.flush();
    expect(h.nextReady()).toBe(0); // the first one is not "next"
    h.setPosition(1_600);
    await vi.advanceTimersByTimeAsync(1_600);
    expect(h.nextReady()).toBe(0); // being synthesised, not ready
    h.pending[1]?.resolve(2);
    await h.flush();
    expect(h.nextReady()).toBe(1);
  });

  it('without a duration, synthesises one ahead once the current one plays', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    for (const text of ['one', 'two', 'three']) h.say(text);
    await h.flush();
    expect(h.texts()).toEqual(['one']);
    h.pending[0]?.resolve(undefined);
    await h.flush();
    expect(h.texts()).toEqual(['one', 'two']);
  });

  it('uses the measured synthesis time as the lead', async () => {
    const pacing = createSynthesisPacing({ initialLeadMs: 1_000, marginMs: 100 });
    expect(pacing.leadMs()).toBe(1_000);
    for (let i = 0; i < 20; i++) pacing.record(200);
    expect(pacing.leadMs()).toBeGreaterThanOrEqual(300);
    expect(pacing.leadMs()).toBeLessThan(400);
    pacing.record(2_000);
    expect(pacing.leadMs()).toBeGreaterThan(1_000); // a slow answer widens the lead at once
  });
});

describe('SpeechQueue: dropping at every state', () => {
  it('waiting (nothing paid): dropped silently', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    h.say('two');
    await h.flush();
    expect(h.queue.withdraw('two')).toBe(true);
    expect(h.unplayed).toEqual([]);
    expect(h.queue.pending).toBe(1);
  });

  it('an edit replaces a waiting utterance in its place; once its synthesis began, it stays as paid', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    h.say('two');
    h.say('three');
    await h.flush();
    const edit = (key: string, text: string) =>
      h.queue.replace({
        text,
        speaker: SPEAKER,
        requestedBy: { id: 'u1', name: 'u1' },
        key,
        onFailure: () => {},
      });
    expect(edit('two', 'two, edited')).toBe(true);
    expect(h.queue.unheard().map((request) => request.text)).toEqual(['one', 'two, edited', 'three']);
    // 'one' is being synthesised: too late to change what is paid for.
    expect(edit('one', 'one, edited')).toBe(false);
    expect(edit('missing', 'nothing')).toBe(false);
    expect(h.texts()).toEqual(['one']);
  });

  it('synthesising: its request is aborted, and no error escapes', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    await h.flush();
    expect(h.queue.stop()).toBe(1);
    expect(h.pending[0]?.signal.aborted).toBe(true);
    await h.flush();
    expect(h.unplayed).toEqual([]);
    expect(h.played).toEqual([]);
    expect(h.failures).toEqual([]);
  });

  it('paid in the same moment it is dropped: reported unplayed once its headers are handled', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    await h.flush();
    h.pending[0]?.resolve(1); // the headers are in, not yet handled
    h.queue.stop();
    await h.flush();
    expect(h.unplayed).toEqual([{ text: 'one', reason: 'stop' }]);
    expect(h.played).toEqual([]);
    expect(h.failures).toEqual([]);
  });

  it('ready and still downloading: reported unplayed at once, its stream destroyed without an error', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    h.say('two');
    await h.flush();
    h.pending[0]?.resolve(undefined); // no duration: the next is synthesised at once
    await h.flush();
    h.pending[1]?.resolve(1);
    await h.flush();
    h.pending[1]?.audio.write(Buffer.alloc(100)); // downloading
    h.setPosition(300); // the first has been heard in part
    const unhandled = vi.fn();
    process.on('uncaughtException', unhandled);
    try {
      h.queue.close('left');
      h.pending[1]?.audio.destroy(new Error('socket reset mid-download'));
      await h.flush();
    } finally {
      process.off('uncaughtException', unhandled);
    }
    expect(unhandled).not.toHaveBeenCalled();
    expect(h.unplayed).toEqual([{ text: 'two', reason: 'left' }]);
    expect(h.stops()).toBe(1); // the one playing is cut
  });

  it('playing: cut by the player, counted as heard (not unplayed)', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    h.say('two');
    await h.flush();
    h.pending[0]?.resolve(5);
    await h.flush();
    h.setPosition(40);
    expect(h.queue.skip()).toBe(true);
    await h.flush();
    expect(h.stops()).toBe(1);
    expect(h.unplayed).toEqual([]);
    // The next one is due now.
    expect(h.texts()).toEqual(['one', 'two']);
  });

  it('handed to a player that never played a frame of it (the connection went): unplayed', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    await h.flush();
    h.pending[0]?.resolve(5);
    await h.flush();
    expect(h.played).toHaveLength(1);
    h.queue.close('kicked');
    await h.flush();
    expect(h.unplayed).toEqual([{ text: 'one', reason: 'kicked' }]);
  });

  it('/skip before the current one plays drops it (unplayed) and moves on', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    h.say('two');
    await h.flush();
    h.pending[0]?.resolve(1); // paid, not yet handed to the player
    h.queue.skip();
    await h.flush();
    expect(h.texts()).toEqual(['one', 'two']);
    h.pending[1]?.resolve(1);
    await h.flush();
    expect(h.unplayed).toEqual([{ text: 'one', reason: 'skip' }]);
    expect(h.played.map((u) => u.request.text)).toEqual(['two']);
  });

  it('a failed synthesis tells its member and the queue goes on', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    h.say('two');
    await h.flush();
    h.pending[0]?.reject(new Error('503'));
    await h.flush();
    expect(h.failures.map((f) => f.text)).toEqual(['one']);
    expect(h.texts()).toEqual(['one', 'two']);
  });

  it('withdraws the current one while it is still being prepared', async () => {
    const h = harness();
    h.queue.setCanPlay(true);
    h.say('one');
    h.say('two');
    await h.flush();
    expect(h.queue.withdraw('one')).toBe(true);
    await h.flush();
    expect(h.texts()).toEqual(['one', 'two']);
  });
});

describe('SpeechQueue: bounds', () => {
  it('refuses past the server’s and the member’s bounds', () => {
    const h = harness({ perServer: 3, perMember: 2 });
    expect(h.say('a', 'u1')).toEqual({ kind: 'queued', ahead: 0 });
    expect(h.say('b', 'u1')).toEqual({ kind: 'queued', ahead: 1 });
    expect(h.say('c', 'u1')).toEqual({ kind: 'queue-full', scope: 'member', limit: 2 });
    expect(h.say('d', 'u2')).toEqual({ kind: 'queued', ahead: 2 });
    expect(h.say('e', 'u3')).toEqual({ kind: 'queue-full', scope: 'server', limit: 3 });
  });

  it('counts the characters queued and not yet paid for, per member', async () => {
    const h = harness();
    h.say('héllo', 'u1');
    h.say('abc', 'u2');
    expect(h.tally.of('g', 'u1')).toEqual({ member: 5, guild: 8, all: 8 });
    expect(h.tally.of('g', 'u3').member).toBe(0);
    h.queue.setCanPlay(true);
    await h.flush();
    // The first is being synthesised: its money is reserved by the guard now, no longer "queued".
    expect(h.tally.of('g', 'u1')).toEqual({ member: 0, guild: 3, all: 3 });
    h.pending[0]?.resolve(1);
    await h.flush();
    h.queue.finished(h.played[0] as Utterance);
    await h.flush();
    expect(h.tally.of('g', 'u2')).toEqual({ member: 0, guild: 0, all: 0 });
  });

  it('counts the member in every server, everyone in theirs, and everyone everywhere', () => {
    const tally = new QueuedTally();
    const g1 = harness({ guildId: 'g1', tally });
    const g2 = harness({ guildId: 'g2', tally });
    const g3 = harness({ guildId: 'g3', tally });
    g1.say('12345', 'u1');
    g1.say('1234567', 'u2');
    g2.say('12345678901', 'u1');
    g3.say('1234567890123', 'u3');
    expect(tally.of('g1', 'u1')).toEqual({ member: 16, guild: 12, all: 36 });
    expect(tally.of('g3', 'u2')).toEqual({ member: 7, guild: 13, all: 36 });
    // A server Herald is not in voice in holds nothing.
    expect(tally.of('g9', 'u1')).toEqual({ member: 16, guild: 0, all: 36 });
  });

  it('takes back what is withdrawn, edited, skipped or stopped before it was paid for', async () => {
    const h = harness();
    h.say('one', 'u1');
    h.say('two', 'u2');
    h.say('three', 'u1');
    h.say('four', 'u2');
    expect(h.tally.of('g', 'u1')).toEqual({ member: 8, guild: 15, all: 15 });
    expect(h.queue.withdraw('two')).toBe(true);
    expect(h.tally.of('g', 'u2')).toEqual({ member: 4, guild: 12, all: 12 });
    // An edit counts at its new length, once.
    h.queue.replace({
      text: 'three, edited',
      speaker: SPEAKER,
      requestedBy: { id: 'u1', name: 'u1' },
      key: 'three',
      onFailure: () => {},
    });
    expect(h.tally.of('g', 'u1')).toEqual({ member: 16, guild: 20, all: 20 });
    // The first one skipped while it waits to be due.
    expect(h.queue.skip()).toBe(true);
    expect(h.tally.of('g', 'u1')).toEqual({ member: 13, guild: 17, all: 17 });
    h.queue.stop();
    expect(h.tally.of('g', 'u1')).toEqual({ member: 0, guild: 0, all: 0 });
    // Nothing counted twice on the way: a new utterance counts from zero.
    h.say('five', 'u2');
    expect(h.tally.of('g', 'u2')).toEqual({ member: 4, guild: 4, all: 4 });
    h.queue.close('left');
    expect(h.tally.of('g', 'u2')).toEqual({ member: 0, guild: 0, all: 0 });
  });
});
