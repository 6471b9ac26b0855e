/**
 * The patch in patches/@discordjs+voice+0.19.2+003+first-frame-at-once.patch (see patches/README.md): a stream
 * that starts after silence, arriving faster than real time, has its first frame sent at once instead of prepared
 * at the next 20 ms cycle and sent at the one after (20–40 ms after the audio was ready). A stream arriving at real
 * time keeps the cycle's pacing, so it cannot run dry.
 */
import { Readable } from 'node:stream';
import { AudioPlayer, AudioResource } from '@discordjs/voice';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fakeCycleClock, flushTicks, standInConnection } from '../support/audio-cycle.ts';

/** What the player asks of a voice connection, recorded; always Ready. */
function fakeConnection() {
  const events: string[] = [];
  const connection = standInConnection({
    prepared: (packet) => events.push(`prepare ${packet.toString()}`),
    sent: (packet) => events.push(`send ${packet.toString()} at ${Date.now()}`),
  });
  return { connection, events };
}

/** A resource whose stream already holds `frames` Opus frames (named f1, f2, …) and then stays open. */
function resourceHolding(frames: number): AudioResource {
  const stream = new Readable({ objectMode: true, read() {} });
  for (let i = 1; i <= frames; i++) stream.push(Buffer.from(`f${i}`));
  return new AudioResource([], [stream], undefined, 0);
}

let player: AudioPlayer;
beforeEach(() => {
  fakeCycleClock();
  player = new AudioPlayer();
});
afterEach(() => {
  player.stop(true);
  vi.useRealTimers();
});

describe('@discordjs/voice AudioPlayer, first frame (patched)', () => {
  it('sends the first frame at once when the stream is ahead of real time, and paces the rest', async () => {
    const { connection, events } = fakeConnection();
    (player as unknown as { subscribe(c: unknown): void }).subscribe(connection);
    player.play(resourceHolding(5));
    await flushTicks();
    // Unpatched: nothing is sent before the audio cycle has prepared f1 and then dispatched it a cycle later.
    expect(events).toEqual(['prepare f1', 'send f1 at 1000000', 'prepare f2']);
    // Then the cycle (started by this, the only player) sends f2 and paces the rest 20 ms apart.
    await vi.advanceTimersByTimeAsync(45);
    expect(events.filter((event) => event.startsWith('send'))).toEqual([
      'send f1 at 1000000',
      'send f2 at 1000000',
      'send f3 at 1000020',
      'send f4 at 1000040',
    ]);
  });

  it('keeps the cycle when the stream arrives at real time (one frame ahead)', async () => {
    const { connection, events } = fakeConnection();
    (player as unknown as { subscribe(c: unknown): void }).subscribe(connection);
    player.play(resourceHolding(1));
    await flushTicks();
    await vi.advanceTimersByTimeAsync(15);
    expect(events).toEqual(['prepare f1']);
    await vi.advanceTimersByTimeAsync(10);
    expect(events.filter((event) => event.startsWith('send'))).toEqual(['send f1 at 1000020']);
  });
});
