/** The voice server's UDP socket, run by udp-receiver-worker.ts: datagrams come back with their arrival times. */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { FromReceiver, ToReceiver } from './udp-receiver-worker.ts';

/** The running receiver. */
export interface UdpReceiver {
  readonly port: number;
  /** The receiving thread's nice value, as set; a sentence when it could not be set. */
  readonly nice: number | string | undefined;
  /**
   * Reads the socket in turns from now on: whenever a turn found the socket nearly empty, the thread sleeps `ms`
   * and then takes everything that arrived meanwhile, instead of waking for every datagram (0: wake for each, the
   * default). Each wake-up costs the receiving thread, and on loopback the sending one too, a few µs a datagram
   * that a voice server on its own machine would not take from the bot's cores; the price is that a datagram's
   * arrival time may be read up to `ms` late, which counts against the sender.
   */
  setNap(ms: number): void;
  /**
   * Holds datagrams on the receiving thread from now on, with their arrival times, instead of handing each batch
   * to this thread: while held, no datagram costs this thread anything. {@link release} hands them over.
   */
  hold(): void;
  /** What is held: how many datagrams, from how many SSRCs, and when the last arrived (this thread's clock). */
  held(): Promise<HeldSummary>;
  /** Hands every held datagram to `onPacket` (marked held), in arrival order, and stops holding. */
  release(): Promise<void>;
  close(): Promise<void>;
}

/** See {@link UdpReceiver.held}. */
export interface HeldSummary {
  readonly packets: number;
  readonly sources: number;
  /** `performance.now()` of this thread at the last arrival; undefined when nothing is held. */
  readonly lastReceivedAt: number | undefined;
}

/**
 * Binds a UDP socket on 127.0.0.1 in a worker thread, which answers IP discovery itself; every other datagram
 * reaches `onPacket` with `receivedAt`, its arrival on this thread's `performance.now()` clock, taken in the
 * worker when it arrived (however busy this thread was then).
 */
export async function startUdpReceiver(
  receiveBufferBytes: number,
  onPacket: (packet: Buffer, receivedAt: number, held: boolean) => void,
  nice?: number,
): Promise<UdpReceiver> {
  const worker = new Worker(new URL('./udp-receiver-worker.ts', import.meta.url), {
    // Also the thread's name in the OS (/proc/<pid>/task/*/comm), where the bench reads its CPU.
    name: 'voice-receiver',
    workerData: { receiveBufferBytes, nice },
  });
  // The emulator's other sockets keep a test alive; the receiver alone must not.
  worker.unref();
  // Answers to `summary` and `release`, in the order they were asked (the worker answers in order).
  const summaries: ((summary: HeldSummary) => void)[] = [];
  const releases: (() => void)[] = [];
  const { port, niceSet } = await new Promise<{ port: number; niceSet: number | string | undefined }>(
    (resolve, reject) => {
      worker.once('error', reject);
      worker.on('message', (message: FromReceiver) => {
        if (message.t === 'bound') {
          resolve({ port: message.port, niceSet: message.nice });
          return;
        }
        if (message.t === 'held') {
          summaries.shift()?.({
            packets: message.packets,
            sources: message.sources,
            lastReceivedAt: message.packets === 0 ? undefined : message.lastAt - performance.timeOrigin,
          });
          return;
        }
        if (message.t === 'released') {
          releases.shift()?.();
          return;
        }
        const bytes = Buffer.from(message.bytes.buffer, message.bytes.byteOffset, message.bytes.byteLength);
        const held = message.held === true;
        let offset = 0;
        for (let i = 0; i < message.lengths.length; i++) {
          const length = message.lengths[i] ?? 0;
          onPacket(
            bytes.subarray(offset, offset + length),
            (message.at[i] ?? 0) - performance.timeOrigin,
            held,
          );
          offset += length;
        }
      });
    },
  );
  worker.on('error', () => {});
  const post = (message: ToReceiver): void => worker.postMessage(message);
  return {
    port,
    nice: niceSet,
    setNap: (ms) => post({ t: 'nap', ms }),
    hold: () => post({ t: 'hold' }),
    held: () =>
      new Promise((resolve) => {
        summaries.push(resolve);
        post({ t: 'summary' });
      }),
    release: () =>
      new Promise((resolve) => {
        releases.push(resolve);
        post({ t: 'release' });
      }),
    close: async () => {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      post({ t: 'close' });
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 1_000))]);
      await worker.terminate();
    },
  };
}
