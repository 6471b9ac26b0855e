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
  close(): Promise<void>;
}

/**
 * Binds a UDP socket on 127.0.0.1 in a worker thread, which answers IP discovery itself; every other datagram
 * reaches `onPacket` with `receivedAt`, its arrival on this thread's `performance.now()` clock, taken in the
 * worker when it arrived (however busy this thread was then).
 */
export async function startUdpReceiver(
  receiveBufferBytes: number,
  onPacket: (packet: Buffer, receivedAt: number) => void,
  nice?: number,
): Promise<UdpReceiver> {
  const worker = new Worker(new URL('./udp-receiver-worker.ts', import.meta.url), {
    // Also the thread's name in the OS (/proc/<pid>/task/*/comm), where the bench reads its CPU.
    name: 'voice-receiver',
    workerData: { receiveBufferBytes, nice },
  });
  // The emulator's other sockets keep a test alive; the receiver alone must not.
  worker.unref();
  const { port, niceSet } = await new Promise<{ port: number; niceSet: number | string | undefined }>(
    (resolve, reject) => {
      worker.once('error', reject);
      worker.on('message', (message: FromReceiver) => {
        if (message.t === 'bound') {
          resolve({ port: message.port, niceSet: message.nice });
          return;
        }
        const bytes = Buffer.from(message.bytes.buffer, message.bytes.byteOffset, message.bytes.byteLength);
        let offset = 0;
        message.lengths.forEach((length, i) => {
          onPacket(bytes.subarray(offset, offset + length), (message.at[i] ?? 0) - performance.timeOrigin);
          offset += length;
        });
      });
    },
  );
  worker.on('error', () => {});
  const post = (message: ToReceiver): void => worker.postMessage(message);
  return {
    port,
    nice: niceSet,
    setNap: (ms) => post({ t: 'nap', ms }),
    close: async () => {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      post({ t: 'close' });
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 1_000))]);
      await worker.terminate();
    },
  };
}
