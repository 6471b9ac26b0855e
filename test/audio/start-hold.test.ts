/** When the first packets of a stream go to the player (src/audio/start-hold.ts), from their arrival times. */

import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createStartHold, createStartHoldStream, rebufferWhenDry } from '../../src/audio/start-hold.ts';

/**
 * Packets arriving `perArrival` at a time, `msPerArrival` apart, at most `total` of them: how many had arrived when
 * the hold let them go (`total` when it held them to the end).
 */
function releasedAfter(o: {
  perArrival: number;
  msPerArrival: number;
  total: number;
  durationMs?: number;
}): number {
  const out: Buffer[] = [];
  const sink = { push: (packet: Buffer) => out.push(packet) };
  const hold = createStartHold({
    startFrames: 3,
    slowStartFrames: 5,
    ...(o.durationMs === undefined ? {} : { durationMs: o.durationMs }),
  });
  for (let added = 0, at = 1_000; added < o.total; at += o.msPerArrival) {
    for (let i = 0; i < o.perArrival && added < o.total; i++, added++) hold.add(Buffer.of(added), sink, at);
    hold.caughtUp(sink);
    if (out.length > 0) {
      expect(out.map((packet) => packet[0])).toEqual(Array.from({ length: added }, (_, i) => i));
      return added;
    }
  }
  hold.end(sink);
  expect(out).toHaveLength(o.total);
  return o.total;
}

describe('createStartHold', () => {
  it('lets a service at four times real time go on its third packet', () => {
    expect(releasedAfter({ perArrival: 1, msPerArrival: 5, total: 100, durationMs: 2_000 })).toBe(3);
  });

  it('judges a service that sends several packets at a time from the arrivals after its first', () => {
    // Four packets every 20 ms (4 × real time): known after the second arrival.
    expect(releasedAfter({ perArrival: 4, msPerArrival: 20, total: 100, durationMs: 2_000 })).toBe(8);
    // Five every 200 ms (half real time): the first five tell nothing; 2 s × 0.5 less 20 ms = 49 frames behind,
    // and five: the eleventh arrival.
    expect(releasedAfter({ perArrival: 5, msPerArrival: 200, total: 100, durationMs: 2_000 })).toBe(55);
  });

  it('without the length, holds five from a slow service, as before', () => {
    expect(releasedAfter({ perArrival: 5, msPerArrival: 200, total: 100 })).toBe(5);
    expect(releasedAfter({ perArrival: 1, msPerArrival: 40, total: 100 })).toBe(5);
  });

  it('holds what a slow service falls behind by the end (less 20 ms), whatever the length', () => {
    // Half real time, one packet each 40 ms.
    expect(releasedAfter({ perArrival: 1, msPerArrival: 40, total: 100, durationMs: 2_000 })).toBe(54);
    expect(releasedAfter({ perArrival: 1, msPerArrival: 40, total: 250, durationMs: 5_000 })).toBe(129);
  });

  it('does not hold a service at real time longer for a page read a little late', () => {
    // Six pages at real time, the last read 8 ms late: measured from the first and last, 0.93 × real time, which
    // would hold 3 frames more for a 1.2 s clip.
    const out: Buffer[] = [];
    const sink = { push: (packet: Buffer) => out.push(packet) };
    const hold = createStartHold({ startFrames: 3, slowStartFrames: 5, durationMs: 1_200 });
    for (let i = 0; i < 6; i++) hold.add(Buffer.of(i), sink, 1_000 + i * 20 + (i === 5 ? 8 : 0));
    hold.caughtUp(sink);
    expect(out).toHaveLength(6);
  });

  it('lets everything go at the end when the pace never showed', () => {
    expect(releasedAfter({ perArrival: 8, msPerArrival: 0, total: 8, durationMs: 2_000 })).toBe(8);
  });

  it('says when, and only when, it held a start for a slow service', () => {
    const told: [number, number][] = [];
    const run = (msApart: number): void => {
      const sink = { push: () => {} };
      const hold = createStartHold({
        startFrames: 3,
        slowStartFrames: 5,
        durationMs: 2_000,
        onSlowStart: (heldMs, pace) => told.push([heldMs, pace]),
      });
      for (let i = 0; i < 100 && hold.holding; i++) {
        hold.add(Buffer.of(i), sink, 1_000 + i * msApart);
        hold.caughtUp(sink);
      }
    };
    run(5);
    run(20);
    expect(told).toEqual([]);
    run(40);
    expect(told).toEqual([[54 * 20, 0.5]]);
  });

  it('passes packets on as they come once it let go', () => {
    const out: Buffer[] = [];
    const sink = { push: (packet: Buffer) => out.push(packet) };
    const hold = createStartHold({ startFrames: 3, slowStartFrames: 5 });
    for (let i = 0; i < 3; i++) hold.add(Buffer.of(i), sink, 1_000 + i * 5);
    expect(hold.holding).toBe(true);
    hold.caughtUp(sink);
    expect(hold.holding).toBe(false);
    hold.add(Buffer.of(3), sink, 2_000);
    expect(out.map((packet) => packet[0])).toEqual([0, 1, 2, 3]);
  });
});

describe('createStartHold: the player ran dry inside the audio', () => {
  /**
   * A 2 s clip whose first 25 packets came at four times real time and were played, then `ranDry` at 500 ms; the rest at `msApart` a
   * packet: how many of the rest had come when the hold let them go.
   */
  function rebufferedAfter(
    msApart: number,
    o: { maxRebufferFrames?: number; durationMs?: number } = {},
  ): number {
    const out: Buffer[] = [];
    const sink = { push: (packet: Buffer) => out.push(packet) };
    const hold = createStartHold({ startFrames: 3, slowStartFrames: 5, durationMs: 2_000, ...o });
    for (let i = 0; i < 25; i++) hold.add(Buffer.of(i), sink, 1_000 + i * 5);
    hold.caughtUp(sink);
    expect(out).toHaveLength(25);
    hold.ranDry(500);
    expect(hold.holding).toBe(true);
    for (let i = 25, at = 1_600; i < 100; i++, at += msApart) {
      hold.add(Buffer.of(i), sink, at);
      hold.caughtUp(sink);
      if (out.length > 25) {
        expect(out.map((packet) => packet[0])).toEqual(Array.from({ length: i + 1 }, (_, k) => k));
        return i + 1 - 25;
      }
    }
    hold.end(sink);
    return 75;
  }

  it('holds the rest of a service that slowed down until it can play to the end', () => {
    // Half real time for the last 1.5 s: 1.5 s × 0.5 less 20 ms = 37 frames behind, and five.
    expect(rebufferedAfter(40)).toBe(42);
  });

  it('takes a service a little slower than real time for slow once it ran dry', () => {
    // Nine tenths of real time, which a start takes for real time in its first five pages: 1.5 s × 0.1 less 20 ms
    // = 7 frames behind, and five.
    expect(rebufferedAfter(200 / 9)).toBe(12);
  });

  it('lets a service that caught up go on its third packet', () => {
    expect(rebufferedAfter(5)).toBe(3);
  });

  it('holds five from a service back at real time', () => {
    expect(rebufferedAfter(20)).toBe(5);
  });

  it('holds no more than maxRebufferFrames', () => {
    expect(rebufferedAfter(100, { maxRebufferFrames: 20 })).toBe(20);
  });

  it('judges what is left by the length still to come', () => {
    // 1 s left at half real time: 0.5 s less 20 ms = 24 frames behind, and five.
    expect(rebufferedAfter(40, { durationMs: 1_500 })).toBe(29);
  });

  it('is not held again while holding, or after the end', () => {
    const out: Buffer[] = [];
    const sink = { push: (packet: Buffer) => out.push(packet) };
    const hold = createStartHold({ startFrames: 3, slowStartFrames: 5, durationMs: 2_000 });
    hold.ranDry(0);
    for (let i = 0; i < 3; i++) hold.add(Buffer.of(i), sink, 1_000 + i * 5);
    hold.caughtUp(sink);
    // The start's own hold: a fast service goes on its third packet, not held as the rest of the audio.
    expect(out).toHaveLength(3);
    hold.end(sink);
    hold.ranDry(60);
    expect(hold.holding).toBe(false);
  });
});

describe('rebufferWhenDry', () => {
  it('tells the hold how much was played when the reader found nothing, and not for internal reads', async () => {
    const dry: number[] = [];
    const stream = new Readable({ objectMode: true, read() {} });
    rebufferWhenDry(stream, { ranDry: (playedMs) => dry.push(playedMs) });
    stream.push(Buffer.of(1));
    stream.push(Buffer.of(2));
    expect(stream.read()).toEqual(Buffer.of(1));
    expect(stream.read(0)).toBeNull();
    expect(stream.read()).toEqual(Buffer.of(2));
    expect(dry).toEqual([]);
    expect(stream.read()).toBeNull();
    expect(dry).toEqual([40]);
    stream.destroy();
    stream.read();
    expect(dry).toEqual([40]);
  });
});

describe('createStartHoldStream', () => {
  // Packets out of an encoder in pieces of five, whose input arrived `msPerPiece` apart: how many had come out when the
  // first went on.
  const releasedAfter = async (msPerPiece: number, durationMs: number): Promise<number> => {
    const packets = Array.from({ length: 100 }, (_, i) => Buffer.of(i));
    const hold = createStartHoldStream({
      startFrames: 3,
      slowStartFrames: 5,
      durationMs,
      arrivedAt: (index) => 1_000 + Math.floor(index / 5) * msPerPiece,
    });
    let written = 0;
    let released: number | undefined;
    hold.once('data', () => {
      released ??= written;
    });
    const out: Buffer[] = [];
    hold.on('data', (packet: Buffer) => out.push(packet));
    for await (const packet of Readable.from(packets)) {
      written++;
      hold.write(packet);
      await new Promise((resolve) => setImmediate(resolve));
    }
    hold.end();
    await new Promise((resolve) => hold.once('end', resolve));
    expect(out).toEqual(packets);
    return released ?? written;
  };

  it('holds a slow service by the input’s arrival, not by when the encoder let the packets out', async () => {
    // Five packets each 200 ms: half real time, 2 s × 0.5 less 20 ms = 49 behind, and five: the eleventh piece.
    expect(await releasedAfter(200, 2_000)).toBe(55);
    // Five each 25 ms: four times real time, known from the first packet of the second piece on.
    expect(await releasedAfter(25, 2_000)).toBeLessThanOrEqual(10);
  });
});
