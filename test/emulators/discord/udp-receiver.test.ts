/**
 * The voice server's receiving thread can read its socket in turns (the bench's P4 asks for it, so that hundreds
 * of streams do not wake it for every packet): it must still take every datagram, in order, and go back to waking
 * for each one when asked.
 */
import dgram from 'node:dgram';
import { performance } from 'node:perf_hooks';
import { afterEach, expect, it } from 'vitest';
import { startUdpReceiver, type UdpReceiver } from '../../../emulators/discord/udp-receiver.ts';

let receiver: UdpReceiver | undefined;
let client: dgram.Socket | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  await receiver?.close();
  receiver = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An RTP-shaped datagram numbered `n` (the receiver passes on anything that is not IP discovery). */
const datagram = (n: number): Buffer => {
  const packet = Buffer.alloc(60);
  packet[0] = 0x80;
  packet[1] = 0x78;
  packet.writeUInt16BE(n, 2);
  return packet;
};

async function start(): Promise<{ arrivals: { n: number; at: number }[]; send: (n: number) => void }> {
  const arrivals: { n: number; at: number }[] = [];
  receiver = await startUdpReceiver(1 << 20, (packet, receivedAt) => {
    arrivals.push({ n: packet.readUInt16BE(2), at: receivedAt });
  });
  const socket = dgram.createSocket('udp4');
  client = socket;
  const port = receiver.port;
  await new Promise<void>((resolve) => socket.connect(port, '127.0.0.1', resolve));
  return { arrivals, send: (n) => socket.send(datagram(n)) };
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
