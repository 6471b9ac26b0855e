/**
 * Speech queues of several servers sharing one start gate (src/rush): starts in the order asked, a failure or a
 * drop in one server never holds another's start, and the next utterance of a queue, synthesised ahead, needs no turn.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { createStartGate, type StartGate } from '../../src/rush/index.ts';
import type { GenerateResult } from '../../src/tts/index.ts';
import { SpeechQueue, type SpeechRequest, type Utterance } from '../../src/voice/queue.ts';

const silentLogger = createLogger({ level: 'error', write: () => {} });
const SPEAKER = { id: 's', name: 'Voice', voiceKey: 's', gender: null, languages: null };

/** One server's queue whose syntheses the test answers (or fails) by hand, sharing `gate`. */
function server(guildId: string, gate: StartGate, log: string[]) {
  const answers = new Map<string, { resolve: () => void; reject: (error: Error) => void }>();
  const failures: string[] = [];
  const played: Utterance[] = [];
  const queue: SpeechQueue = new SpeechQueue({
    guildId,
    logger: silentLogger,
    limits: { perServer: 10, perMember: 10 },
    pacing: { record: () => {}, leadMs: () => 10_000 },
    startGate: gate,
    synthesize: (request) =>
      new Promise<GenerateResult>((resolve, reject) => {
        log.push(`synthesise ${request.text}`);
        answers.set(request.text, {
          resolve: () =>
            resolve({
              audio: new PassThrough(),
              contentType: 'audio/ogg',
              format: 'opus',
              sampleRate: 48_000,
              durationS: 1,
              costUsd: 0.001,
              balanceUsd: 1,
              requestId: undefined,
              attempts: 1,
            }),
          reject,
        });
      }),
    play: (utterance: Utterance) => {
      log.push(`play ${utterance.request.text}`);
      played.push(utterance);
      queueMicrotask(() => queue.started(utterance, () => 0));
    },
    stopPlayback: () => {},
  });
  queue.setCanPlay(true);
  const say = (text: string) => {
    const request: SpeechRequest = {
      text,
      speaker: SPEAKER,
      requestedBy: { id: `member-of-${guildId}`, name: 'Member' },
      onFailure: () => failures.push(text),
    } as unknown as SpeechRequest;
    return queue.enqueue(request);
  };
  return { queue, say, answers, failures, played };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('speech queues sharing a start gate', () => {
  it('synthesises starts in the order asked, one turn at a time', async () => {
    const gate = createStartGate({ maxRunning: 1 });
    const log: string[] = [];
    const servers = ['a', 'b', 'c'].map((id) => server(id, gate, log));
    for (const [i, s] of servers.entries()) s.say(`hello ${i}`);
    await vi.advanceTimersByTimeAsync(50);
    expect(log).toEqual(['synthesise hello 0']);
    for (const [i, s] of servers.entries()) {
      s.answers.get(`hello ${i}`)?.resolve();
      await vi.advanceTimersByTimeAsync(50);
    }
    expect(log).toEqual([
      'synthesise hello 0',
      'play hello 0',
      'synthesise hello 1',
      'play hello 1',
      'synthesise hello 2',
      'play hello 2',
    ]);
    expect(gate.running).toBe(0);
  });

  it("isolates one server's failure: its member is told, its turn is given back, the next server starts", async () => {
    const gate = createStartGate({ maxRunning: 1 });
    const log: string[] = [];
    const [a, b] = [server('a', gate, log), server('b', gate, log)];
    a.say('breaks');
    b.say('fine');
    await vi.advanceTimersByTimeAsync(50);
    a.answers.get('breaks')?.reject(new Error('service down'));
    await vi.advanceTimersByTimeAsync(50);
    expect(a.failures).toEqual(['breaks']);
    expect(log).toEqual(['synthesise breaks', 'synthesise fine']);
    b.answers.get('fine')?.resolve();
    await vi.advanceTimersByTimeAsync(50);
    expect(log.at(-1)).toBe('play fine');
    expect(b.failures).toEqual([]);
    expect(gate.running).toBe(0);
  });

  it('gives the turn back when a waiting or a running start is stopped, without telling anyone of a failure', async () => {
    const gate = createStartGate({ maxRunning: 1 });
    const log: string[] = [];
    const [a, b, c] = [server('a', gate, log), server('b', gate, log), server('c', gate, log)];
    a.say('first');
    b.say('waits');
    c.say('third');
    await vi.advanceTimersByTimeAsync(50);
    b.queue.stop();
    a.queue.stop();
    await vi.advanceTimersByTimeAsync(50);
    expect(log).toEqual(['synthesise first', 'synthesise third']);
    expect([...a.failures, ...b.failures]).toEqual([]);
  });

  it("lets a queue's next utterance, synthesised ahead, follow without a turn while others wait", async () => {
    const gate = createStartGate({ maxRunning: 1 });
    const log: string[] = [];
    const a = server('a', gate, log);
    a.say('one');
    a.say('two');
    await vi.advanceTimersByTimeAsync(50);
    a.answers.get('one')?.resolve();
    await vi.advanceTimersByTimeAsync(50);
    // Playing 'one' (1 s, a lead of 10 s): 'two' is synthesised ahead, outside the gate.
    expect(log).toEqual(['synthesise one', 'play one', 'synthesise two']);
    const hold = await gate.enter();
    a.answers.get('two')?.resolve();
    await vi.advanceTimersByTimeAsync(50);
    // 'one' ends: 'two' plays at once, though another server's start holds the only turn.
    a.queue.finished(a.played[0] as Utterance);
    await vi.advanceTimersByTimeAsync(0);
    expect(log.at(-1)).toBe('play two');
    expect(gate.waiting).toBe(0);
    hold();
  });
});
