/**
 * The voice server's UDP socket, in a worker thread of its own: it answers IP discovery and timestamps every
 * other datagram as it arrives, then hands them to the main thread in small batches. On Discord the media
 * server is its own machine; here the emulated gateway, REST, interactions and TTS service share the main
 * thread, and a packet read only after they let go would carry their delay as the bot's lateness.
 * See udp-receiver.ts for the main thread's side.
 */
import dgram from 'node:dgram';
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { type HeldChunk, type HeldReader, startHeldReader } from './held-reader.ts';
import { discoveryReply, isDiscoveryRequest, isVoicePacket } from './ip-discovery.ts';

/** Worker → main thread. */
export type FromReceiver =
  | {
      readonly t: 'bound';
      readonly port: number;
      /** The nice value this thread runs at, if one was asked for; why not, if it could not be set. */
      readonly nice: number | string | undefined;
    }
  | {
      readonly t: 'packets';
      /** Datagrams, back to back; `lengths[i]` bytes each. */
      readonly bytes: Uint8Array;
      readonly lengths: ArrayLike<number>;
      /** Arrival times, `performance.timeOrigin + performance.now()` of this thread (epoch ms, sub-ms). */
      readonly at: ArrayLike<number>;
      /** Held on this thread until released (see {@link Held}), rather than handed over as they came. */
      readonly held?: true;
    }
  | {
      readonly t: 'held';
      /** Datagrams held, the distinct SSRCs among them, and when the last one arrived (epoch ms; 0: none yet). */
      readonly packets: number;
      readonly sources: number;
      readonly lastAt: number;
      /** Who holds them: this thread, or the native reader (held-reader.c), with why not when one was asked for. */
      readonly reader: HeldBy;
    }
  /** Every datagram held has been posted (as `packets` messages before this one), and none is held any longer. */
  | { readonly t: 'released' }
  /** A `summary` or `release` could not be answered: the native reader failed, and what it held is lost. */
  | { readonly t: 'failed'; readonly message: string };

if (!parentPort) throw new Error('udp-receiver-worker.ts runs as a worker thread');
const port = parentPort;
const { receiveBufferBytes, nice } = workerData as { receiveBufferBytes: number; nice: number | undefined };

/**
 * Sets this thread's nice value: on Linux a thread's id names it for setpriority, and /proc/thread-self links to
 * .../task/<id>. Returns the value now in force, or why it could not be set.
 */
function setThreadNice(value: number): number | string {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, value);
    return getPriority(tid);
  } catch (error) {
    return `not set (${error instanceof Error ? error.message : String(error)})`;
  }
}
const niceSet = nice === undefined ? undefined : setThreadNice(nice);

/** How long the first packet of a batch waits for others before the batch goes to the main thread. */
const BATCH_MS = 2;
const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: receiveBufferBytes });
let pending: { packets: Buffer[]; at: number[] } | undefined;

const flush = (): void => {
  const batch = pending;
  pending = undefined;
  if (!batch) return;
  // A fresh buffer of its own (Buffer.concat may hand out a slice of the shared pool, which cannot be transferred).
  const bytes = new Uint8Array(batch.packets.reduce((sum, packet) => sum + packet.length, 0));
  let offset = 0;
  for (const packet of batch.packets) {
    bytes.set(packet, offset);
    offset += packet.length;
  }
  const message: FromReceiver = {
    t: 'packets',
    bytes,
    lengths: batch.packets.map((packet) => packet.length),
    at: batch.at,
  };
  port.postMessage(message, [bytes.buffer]);
};

/**
 * Datagrams held on this thread while the main thread is to be left alone (a benchmark's step): copied back to
 * back into large chunks with their lengths and arrival times, so each costs a copy and no message, and the main
 * thread takes none of them until they are released.
 */
class Held {
  static readonly CHUNK_BYTES = 8 * 1024 * 1024;
  static readonly CHUNK_PACKETS = 65_536;
  readonly #chunks: {
    bytes: Uint8Array;
    used: number;
    lengths: Uint16Array;
    at: Float64Array;
    count: number;
  }[] = [];
  readonly #sources = new Set<number>();
  #packets = 0;
  #lastAt = 0;

  /** Holds `packet`, a voice packet (see isVoicePacket). */
  add(packet: Buffer, at: number): void {
    let chunk = this.#chunks.at(-1);
    if (!chunk || chunk.used + packet.length > chunk.bytes.length || chunk.count === Held.CHUNK_PACKETS) {
      chunk = {
        bytes: new Uint8Array(Math.max(Held.CHUNK_BYTES, packet.length)),
        used: 0,
        lengths: new Uint16Array(Held.CHUNK_PACKETS),
        at: new Float64Array(Held.CHUNK_PACKETS),
        count: 0,
      };
      this.#chunks.push(chunk);
    }
    chunk.bytes.set(packet, chunk.used);
    chunk.used += packet.length;
    chunk.lengths[chunk.count] = packet.length;
    chunk.at[chunk.count] = at;
    chunk.count++;
    this.#packets++;
    this.#lastAt = at;
    this.#sources.add(packet.readUInt32BE(8));
  }

  summary(nativeUnavailable: string | undefined): FromReceiver {
    return {
      t: 'held',
      packets: this.#packets,
      sources: this.#sources.size,
      lastAt: this.#lastAt,
      reader: nativeUnavailable === undefined ? { by: 'thread' } : { by: 'thread', nativeUnavailable },
    };
  }

  /** What is held, chunk by chunk in arrival order, each in buffers of its own (transferable). */
  chunks(): HeldChunk[] {
    return this.#chunks.map((chunk) => ({
      bytes: chunk.bytes.slice(0, chunk.used),
      lengths: chunk.lengths.slice(0, chunk.count),
      at: chunk.at.slice(0, chunk.count),
    }));
  }
}

/** Posts held datagrams, in arrival order, then `released`. */
function postHeld(chunks: readonly HeldChunk[]): void {
  for (const chunk of chunks) {
    const message: FromReceiver = { t: 'packets', ...chunk, held: true };
    port.postMessage(message, [chunk.bytes.buffer]);
  }
  port.postMessage({ t: 'released' } satisfies FromReceiver);
}
let held: Held | undefined;

socket.on('message', (message, remote) => {
  takenThisTurn++;
  const at = performance.timeOrigin + performance.now();
  if (isDiscoveryRequest(message)) {
    // IP discovery: echo the sender's address and port.
    socket.send(discoveryReply(message, remote), remote.port, remote.address);
    return;
  }
  if (held) {
    // RTP only (version 2, a header and a tag at least): keepalives, every few seconds a connection, would keep
    // the held traffic from ever reading as quiet; the main thread ignores them too.
    if (isVoicePacket(message)) held.add(message, at);
    return;
  }
  if (!pending) {
    pending = { packets: [], at: [] };
    setTimeout(flush, BATCH_MS);
  }
  pending.packets.push(message);
  pending.at.push(at);
});

/** Who holds the datagrams (see {@link FromReceiver}'s `held`). */
export type HeldBy =
  | { readonly by: 'thread'; readonly nativeUnavailable?: string }
  /** `cpuMs`: what the reader's process has spent, which no thread of this process counts. */
  | { readonly by: 'native'; readonly cpuMs: number };

/** Main thread → worker. */
export type ToReceiver =
  | { readonly t: 'close' }
  | { readonly t: 'nap'; readonly ms: number }
  /**
   * Hold datagrams from now on (with `reader`, a built held-reader.c, that program reads the socket meanwhile);
   * `summary`: say what is held; `release`: post them all and stop holding.
   */
  | { readonly t: 'hold'; readonly reader?: string }
  | { readonly t: 'summary' }
  | { readonly t: 'release' };

/** The native reader, while it holds the datagrams in this thread's stead. */
let native: HeldReader | undefined;
/** Why the native reader asked for could not hold them. */
let nativeUnavailable: string | undefined;

/**
 * Reading in turns (see {@link UdpReceiver.setNap}): after a turn of the event loop that took fewer datagrams than
 * libuv reads from a socket at once (32), the thread sleeps `napMs`, so the kernel queues what arrives meanwhile
 * instead of waking this thread for each one.
 */
const LIBUV_READS_PER_TURN = 32;
const napCell = new Int32Array(new SharedArrayBuffer(4));
let napMs = 0;
let napping = false;
let takenThisTurn = 0;
const nap = (): void => {
  // While the native reader holds the socket this thread reads nothing, and need not wake.
  if (napMs <= 0 || native) {
    napping = false;
    return;
  }
  if (takenThisTurn < LIBUV_READS_PER_TURN) Atomics.wait(napCell, 0, 0, napMs);
  takenThisTurn = 0;
  setImmediate(nap);
};
const startNapping = (): void => {
  if (napMs > 0 && !napping && !native) {
    napping = true;
    setImmediate(nap);
  }
};

/**
 * The socket's libuv handle, through Node's internals (its file descriptor, and reading stopped and started):
 * dgram has no public way to lend its socket to another process. Undefined where these are not as expected.
 */
function socketHandle(): { fd: number; recvStop(): number; recvStart(): number } | undefined {
  const state = Object.getOwnPropertySymbols(socket).find((symbol) => symbol.description === 'state symbol');
  const handle = state && (socket as unknown as Record<symbol, { handle?: unknown }>)[state]?.handle;
  const h = handle as { fd?: unknown; recvStop?: unknown; recvStart?: unknown } | undefined;
  return h &&
    typeof h.fd === 'number' &&
    h.fd >= 0 &&
    typeof h.recvStop === 'function' &&
    typeof h.recvStart === 'function'
    ? (h as { fd: number; recvStop(): number; recvStart(): number })
    : undefined;
}

/** Has `reader` (a built held-reader.c) read the socket from now on; false, with why, when it cannot. */
async function holdNatively(reader: string): Promise<boolean> {
  const handle = socketHandle();
  if (!handle) {
    nativeUnavailable =
      "this Node's dgram does not lend its socket (no handle with fd, recvStop and recvStart)";
    return false;
  }
  handle.recvStop();
  try {
    native = await startHeldReader(reader, handle.fd, napMs);
    return true;
  } catch (error) {
    handle.recvStart();
    nativeUnavailable = `the native reader did not start (${error instanceof Error ? error.message : String(error)})`;
    return false;
  }
}

async function handle(message: ToReceiver): Promise<void> {
  switch (message.t) {
    case 'close':
      native?.kill();
      socket.close(() => process.exit(0));
      return;
    case 'hold':
      // What arrived before is handed over first, in order.
      flush();
      if (held || native) return;
      nativeUnavailable = undefined;
      if (message.reader && (await holdNatively(message.reader))) return;
      held = new Held();
      return;
    case 'summary': {
      if (native) {
        const s = await native.summary();
        port.postMessage({
          t: 'held',
          packets: s.packets,
          sources: s.sources,
          lastAt: s.lastAt,
          reader: { by: 'native', cpuMs: s.cpuMs },
        } satisfies FromReceiver);
        return;
      }
      port.postMessage((held ?? new Held()).summary(nativeUnavailable));
      return;
    }
    case 'release':
      if (native) {
        const { chunks } = await native.release(Held.CHUNK_PACKETS);
        native = undefined;
        socketHandle()?.recvStart();
        startNapping();
        postHeld(chunks);
        return;
      }
      postHeld(held?.chunks() ?? []);
      held = undefined;
      return;
    case 'nap':
      napMs = message.ms;
      native?.nap(napMs);
      startNapping();
      return;
  }
}

// Each message in turn: a native reader's start and answers take a while, and the next message waits for them.
let handled = Promise.resolve();
port.on('message', (message: ToReceiver) => {
  handled = handled.then(() =>
    handle(message).catch((error: unknown) => {
      // The main thread waits for an answer: it is told, and what was held is gone with the reader.
      native?.kill();
      native = undefined;
      socketHandle()?.recvStart();
      port.postMessage({
        t: 'failed',
        message: error instanceof Error ? error.message : String(error),
      } satisfies FromReceiver);
    }),
  );
});

socket.bind(0, '127.0.0.1', () => {
  port.postMessage({ t: 'bound', port: socket.address().port, nice: niceSet } satisfies FromReceiver);
});
