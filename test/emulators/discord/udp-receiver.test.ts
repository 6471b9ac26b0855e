/**
 * The voice server's receiving thread can read its socket in turns (the bench's P4 asks for it, so that hundreds
 * of streams do not wake it for every packet): it must still take every datagram, in order, and go back to waking
 * for each one when asked. Holding datagrams (P4 again), it or the native reader it lends its socket to keeps
 * every one with its arrival time until released.
 */
import dgram from 'node:dgram';
import { performance } from 'node:perf_hooks';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { buildHeldReader } from '../../../emulators/discord/held-reader.ts';
import { startUdpReceiver, type UdpReceiver } from '../../../emulators/discord/udp-receiver.ts';

/** The native reader, built once (a C compiler is part of this machine's kind, and of CI's). */
let nativeReader = '';
beforeAll(() => {
  const built = buildHeldReader();
  if ('unavailable' in built) throw new Error(built.unavailable);
  nativeReader = built.path;
});

let receiver: UdpReceiver | undefined;
let client: dgram.Socket | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  await receiver?.close();
  receiver = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An RTP-shaped datagram numbered `n`, from SSRC `ssrc`, `length` bytes (the receiver passes on anything that is
 * not IP discovery).
 */
const datagram = (n: number, ssrc = 1, length = 60): Buffer => {
  const packet = Buffer.alloc(length);
  packet[0] = 0x80;
  packet[1] = 0x78;
  packet.writeUInt16BE(n, 2);
  packet.writeUInt32BE(ssrc, 8);
  packet.fill(n & 0xff, 12);
  return packet;
};

interface Arrival {
  readonly n: number;
  readonly at: number;
  readonly held: boolean;
  readonly packet: Buffer;
}

async function start(): Promise<{
  arrivals: Arrival[];
  send: (n: number, ssrc?: number, length?: number) => void;
}> {
  const arrivals: Arrival[] = [];
  receiver = await startUdpReceiver(1 << 20, (packet, receivedAt, held) => {
    arrivals.push({ n: packet.readUInt16BE(2), at: receivedAt, held, packet: Buffer.from(packet) });
  });
  const socket = dgram.createSocket('udp4');
  client = socket;
  const port = receiver.port;
  await new Promise<void>((resolve) => socket.connect(port, '127.0.0.1', resolve));
  return { arrivals, send: (n, ssrc, length) => socket.send(datagram(n, ssrc, length)) };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

it('reading in turns, takes every datagram in order, those of a turn together', async () => {
  const { arrivals, send } = await start();
  receiver?.setNap(50);
  await sleep(20);
  const sentAt: number[] = [];
  for (let n = 0; n < 20; n++) {
    sentAt.push(performance.now());
    send(n);
    await sleep(5);
  }
  await until(() => arrivals.length === 20, '20 datagrams');
  expect(arrivals.map((a) => a.n)).toEqual(Array.from({ length: 20 }, (_, n) => n));
  arrivals.forEach((a, i) => {
    expect(a.at).toBeGreaterThanOrEqual(sentAt[i] ?? Number.POSITIVE_INFINITY);
  });
  // Sent 5 ms apart over about 100 ms, read in turns 50 ms apart: a few turns, not one wake-up per datagram.
  const turns = new Set(arrivals.map((a) => Math.floor(a.at))).size;
  expect(turns).toBeLessThanOrEqual(8);
});

it('wakes for each datagram again once the nap is set back to 0', async () => {
  const { arrivals, send } = await start();
  receiver?.setNap(1_000);
  send(1);
  await until(() => arrivals.length === 1, 'the first datagram');
  receiver?.setNap(0);
  // The thread finishes the nap it may be in (up to 1 s); after that each datagram wakes it.
  await sleep(1_200);
  const started = performance.now();
  for (let n = 2; n <= 6; n++) {
    send(n);
    await until(() => arrivals.length === n, `datagram ${n}`);
  }
  // One at a time, each sent once the one before arrived: still napping 1 s, five would take seconds.
  expect(performance.now() - started).toBeLessThan(2_000);
  expect(arrivals.map((a) => a.n)).toEqual([1, 2, 3, 4, 5, 6]);
});

it.each([
  ['the receiving thread', () => undefined, 'thread'],
  ['a native reader', () => nativeReader, 'native'],
])(
  'holding (%s), hands nothing over until released, then every datagram as it came, timed on arrival',
  async (_, reader, by) => {
    const { arrivals, send } = await start();
    send(0);
    await until(() => arrivals.length === 1, 'the datagram before holding');
    receiver?.hold(reader());
    expect(await receiver?.held()).toMatchObject({
      packets: 0,
      sources: 0,
      lastReceivedAt: undefined,
      reader: { by },
    });
    const sentAt: number[] = [];
    for (let n = 1; n <= 300; n++) {
      sentAt.push(performance.now());
      // Three voice sessions, datagrams of different lengths.
      send(n, 100 + (n % 3), 40 + (n % 50));
      if (n % 20 === 0) {
        // A keepalive (8 bytes, not RTP): neither held nor counted, or the held traffic would never read as quiet.
        client?.send(Buffer.alloc(8, 0xff));
        await sleep(2);
      }
    }
    const lastSent = performance.now();
    const deadline = performance.now() + 10_000;
    while (((await receiver?.held())?.packets ?? 0) < 300 && performance.now() < deadline) await sleep(5);
    await sleep(50);
    const summary = await receiver?.held();
    expect(summary).toMatchObject({ packets: 300, sources: 3, reader: { by } });
    expect(summary?.lastReceivedAt).toBeGreaterThanOrEqual(sentAt[299] ?? Number.POSITIVE_INFINITY);
    expect(summary?.lastReceivedAt).toBeLessThanOrEqual(performance.now());
    // Nothing reached this thread while held.
    expect(arrivals).toHaveLength(1);

    const releasedAt = performance.now();
    await receiver?.release();
    expect(arrivals).toHaveLength(301);
    const released = arrivals.slice(1);
    expect(released.map((a) => a.n)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    released.forEach((a, i) => {
      const n = i + 1;
      expect(a.held).toBe(true);
      expect(a.packet.equals(datagram(n, 100 + (n % 3), 40 + (n % 50)))).toBe(true);
      // Timed when it arrived, not when it was handed over.
      expect(a.at).toBeGreaterThanOrEqual(sentAt[i] ?? Number.POSITIVE_INFINITY);
      expect(a.at).toBeLessThanOrEqual(lastSent + 40);
    });
    expect(released.every((a) => a.at < releasedAt)).toBe(true);

    // No longer holding: datagrams come as they arrive again.
    expect(await receiver?.held()).toEqual({
      packets: 0,
      sources: 0,
      lastReceivedAt: undefined,
      reader: { by: 'thread' },
    });
    send(301);
    await until(() => arrivals.length === 302, 'a datagram after the release');
    expect(arrivals.at(-1)).toMatchObject({ n: 301, held: false });
  },
);

it('holding with a native reader, answers IP discovery as the thread does', async () => {
  await start();
  receiver?.hold(nativeReader);
  expect((await receiver?.held())?.reader.by).toBe('native');
  const socket = client;
  if (!socket) throw new Error('no client');
  const request = Buffer.alloc(74);
  request.writeUInt16BE(1, 0);
  request.writeUInt16BE(70, 2);
  request.writeUInt32BE(4242, 4);
  const reply = new Promise<Buffer>((resolve) => socket.once('message', resolve));
  socket.send(request);
  const answer = await reply;
  expect(answer.readUInt16BE(0)).toBe(2);
  expect(answer.readUInt32BE(4)).toBe(4242);
  expect(answer.subarray(8, 72).toString('ascii').replace(/\0+$/, '')).toBe('127.0.0.1');
  expect(answer.readUInt16BE(72)).toBe(socket.address().port);
  // Answered, not held.
  expect((await receiver?.held())?.packets).toBe(0);
});

it('holds in the thread, saying why, when the native reader cannot start', async () => {
  const { arrivals, send } = await start();
  receiver?.hold('/nonexistent/held-reader');
  const summary = await receiver?.held();
  expect(summary?.reader).toMatchObject({
    by: 'thread',
    nativeUnavailable: expect.stringMatching(/did not start/),
  });
  send(7);
  while (((await receiver?.held())?.packets ?? 0) < 1) await sleep(5);
  await receiver?.release();
  expect(arrivals.map((a) => [a.n, a.held])).toEqual([[7, true]]);
});
