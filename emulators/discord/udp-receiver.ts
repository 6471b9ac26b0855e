/** The voice server's UDP socket, run by udp-receiver-worker.ts: datagrams come back with their arrival times. */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { FromReceiver, HeldBy, ToReceiver } from './udp-receiver-worker.ts';

export type { HeldBy } from './udp-receiver-worker.ts';

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
   * to this thread: while held, no datagram costs this thread anything. {@link release} hands them over. With
   * `reader`, a held-reader.c built by {@link buildHeldReader}, that program reads the socket meanwhile, for a
   * sixth of the CPU, and the kernel times each datagram's arrival (the thread holds them if it cannot start).
   */
  hold(reader?: string): void;
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
  /** Who holds them; a native reader's CPU is its own process's, which no thread of this one counts. */
  readonly reader: HeldBy;
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
  const summaries: { resolve: (summary: HeldSummary) => void; reject: (error: Error) => void }[] = [];
  const releases: { resolve: () => void; reject: (error: Error) => void }[] = [];
  const { port, niceSet } = await new Promise<{ port: number; niceSet: number | string | undefined }>(
    (resolve, reject) => {
      worker.once('error', reject);
      worker.on('message', (message: FromReceiver) => {
        if (message.t === 'bound') {
          resolve({ port: message.port, niceSet: message.nice });
          return;
        }
        if (message.t === 'held') {
          summaries.shift()?.resolve({
            packets: message.packets,
            sources: message.sources,
            lastReceivedAt: message.packets === 0 ? undefined : message.lastAt - performance.timeOrigin,
            reader: message.reader,
          });
          return;
        }
        if (message.t === 'released') {
          releases.shift()?.resolve();
          return;
        }
        if (message.t === 'failed') {
          const error = new Error(`the voice receiver's held packets are lost: ${message.message}`);
          for (const waiting of [...summaries.splice(0), ...releases.splice(0)]) waiting.reject(error);
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
    hold: (reader) => post(reader === undefined ? { t: 'hold' } : { t: 'hold', reader }),
    held: () =>
      new Promise((resolve, reject) => {
        summaries.push({ resolve, reject });
        post({ t: 'summary' });
      }),
    release: () =>
      new Promise((resolve, reject) => {
        releases.push({ resolve, reject });
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
