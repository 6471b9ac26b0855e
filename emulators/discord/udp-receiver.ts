/** The voice server's UDP socket, run by udp-receiver-worker.ts: datagrams come back with their arrival times. */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { FromReceiver } from './udp-receiver-worker.ts';

/** The running receiver. */
export interface UdpReceiver {
  readonly port: number;
  /** The receiving thread's nice value, as set; a sentence when it could not be set. */
  readonly nice: number | string | undefined;
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
  return {
    port,
    nice: niceSet,
    close: async () => {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.postMessage({ t: 'close' });
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 1_000))]);
      await worker.terminate();
    },
  };
}
