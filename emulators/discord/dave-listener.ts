/**
 * The members in voice channels, as DAVE clients: davey sessions in the MLS groups that answer the gateway as
 * the Discord client does and decrypt the bot's frames as a member would hear them. They run in worker threads
 * (`dave-listener-worker.ts`): on Discord they are other people's machines, and their MLS work must not take
 * turns with the bot's on its event loop. This is the main thread's side: a proxy per member.
 */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { DaveClient } from './dave-protocol.ts';

/** Why a listener could not hear a frame: davey's error kind, or `unencrypted` (no DAVE on a DAVE call). */
export type DecryptResult =
  | { readonly ok: true; readonly opus: Buffer }
  | { readonly ok: false; readonly error: string };

/** A listener: the gateway talks to it through `client`; the voice server hands its frames to the host. */
export interface DaveListener {
  readonly userId: string;
  readonly client: DaveClient;
  /** The MLS epoch the listener held after its last commit or welcome (0n before it holds a group). */
  epoch(): bigint;
  /** `performance.now()` when it last processed a welcome (joined a group), if ever. */
  welcomedAt(): number | undefined;
  /** `performance.now()` when it last came to hold a group (by a welcome, or by its own commit), if ever. */
  joinedGroupAt(): number | undefined;
  close(): void;
}

/** Messages from a listener back to the gateway. */
export interface ListenerUplink {
  onBinary(userId: string, op: number, payload: Buffer): void;
  onJson(userId: string, op: number, d: Record<string, unknown>): void;
}

/** One MLS operation a member's client performed, timed in the worker (main thread's clock). */
export interface MlsStep {
  readonly userId: string;
  readonly channelId: string;
  /** `proposals` (builds a commit, and a welcome when it adds), `commit` or `welcome` processed. */
  readonly step: string;
  /** `performance.now()` on the main thread's clock. */
  readonly startedAt: number;
  readonly ms: number;
}

/** Every member's DAVE client, spread over a few worker threads. */
export interface DaveListeners {
  /** A new member's client in `channelId`, hearing the bot. */
  create(userId: string, channelId: string, uplink: ListenerUplink): DaveListener;
  /** What each of `listeners` made of one frame, decrypted in order with the MLS messages sent to them. */
  decrypt(listeners: readonly DaveListener[], payload: Buffer): Promise<Map<string, DecryptResult>>;
  /** Stops the worker; pending decryptions resolve as failed (`EmulatorClosed`). */
  close(): Promise<void>;
}

/** Main thread → worker. */
export type ToWorker =
  | { t: 'create'; id: number; userId: string; channelId: string; botUserId: string }
  | { t: 'close'; id: number }
  | { t: 'binary'; id: number; op: number; payload: Uint8Array }
  | { t: 'json'; id: number; op: number; d: Record<string, unknown> }
  | { t: 'decrypt'; request: number; ids: number[]; payload: Uint8Array };

/** Worker → main thread (times are wall-clock ms). */
export type FromWorker =
  | { t: 'binary'; id: number; op: number; payload: Uint8Array }
  | { t: 'json'; id: number; op: number; d: Record<string, unknown> }
  | { t: 'state'; id: number; epoch: string; welcomedAt?: number; joinedAt?: number }
  | { t: 'mls'; id: number; step: string; startedAt: number; ms: number }
  | { t: 'debug'; id: number; line: string }
  | { t: 'decrypted'; request: number; results: [number, Uint8Array | string][] };

interface Proxy {
  readonly userId: string;
  readonly channelId: string;
  readonly uplink: ListenerUplink;
  epoch: bigint;
  welcomedAt: number | undefined;
  joinedGroupAt: number | undefined;
  closed: boolean;
}

const debug = (line: string): void => {
  if (process.env.DAVE_DEBUG) console.log(`${performance.now().toFixed(1)} dave listener: ${line}`);
};

const bytes = (data: Uint8Array): Buffer => Buffer.from(data.buffer, data.byteOffset, data.byteLength);

/** Creates the members' clients for the bot `botUserId`; the worker starts with the first member. */
export function createDaveListeners(
  botUserId: string,
  o: {
    onMlsStep?: (step: MlsStep) => void;
    /** Worker threads the members are spread over (default 1); each member's messages stay in order. */
    threads?: number;
  } = {},
): DaveListeners {
  const threads = Math.max(1, o.threads ?? 1);
  const workers: (Worker | undefined)[] = [];
  let failure: string | undefined;
  let nextId = 1;
  let nextRequest = 1;
  const proxies = new Map<number, Proxy>();
  const ids = new WeakMap<DaveListener, number>();
  const pending = new Map<number, (results: Map<number, Uint8Array | string>) => void>();
  /** The worker reports wall-clock times; the main thread's `performance.now()` counts from its own origin. */
  const local = (wallMs: number): number => wallMs - performance.timeOrigin;

  const failAll = (kind: string): void => {
    failure = kind;
    for (const resolve of pending.values()) resolve(new Map());
    pending.clear();
  };

  const onMessage = (message: FromWorker): void => {
    if (message.t === 'decrypted') {
      const resolve = pending.get(message.request);
      pending.delete(message.request);
      resolve?.(new Map(message.results));
      return;
    }
    const proxy = proxies.get(message.id);
    if (!proxy || proxy.closed) return;
    switch (message.t) {
      case 'binary':
        proxy.uplink.onBinary(proxy.userId, message.op, bytes(message.payload));
        return;
      case 'json':
        proxy.uplink.onJson(proxy.userId, message.op, message.d);
        return;
      case 'state':
        proxy.epoch = BigInt(message.epoch);
        if (message.welcomedAt !== undefined) proxy.welcomedAt = local(message.welcomedAt);
        if (message.joinedAt !== undefined) proxy.joinedGroupAt = local(message.joinedAt);
        return;
      case 'mls':
        o.onMlsStep?.({
          userId: proxy.userId,
          channelId: proxy.channelId,
          step: message.step,
          startedAt: local(message.startedAt),
          ms: message.ms,
        });
        return;
      case 'debug':
        debug(`${proxy.userId.slice(-4)} ${message.line}`);
        return;
    }
  };

  /** Member `id`'s messages go to worker `id % threads`, so each member's stay in order. */
  const post = (id: number, message: ToWorker): void => {
    if (failure) return;
    const lane = id % threads;
    let worker = workers[lane];
    if (!worker) {
      worker = new Worker(new URL('./dave-listener-worker.ts', import.meta.url), { name: 'dave-members' });
      // The emulator's sockets keep a test alive; a forgotten worker must not.
      worker.unref();
      worker.on('message', onMessage);
      worker.on('error', (error) => failAll(`ListenerWorkerFailed: ${error.message}`));
      worker.on('exit', () => failAll('EmulatorClosed'));
      workers[lane] = worker;
    }
    worker.postMessage(message);
  };

  return {
    create: (userId, channelId, uplink) => {
      const id = nextId++;
      const proxy: Proxy = {
        userId,
        channelId,
        uplink,
        epoch: 0n,
        welcomedAt: undefined,
        joinedGroupAt: undefined,
        closed: false,
      };
      proxies.set(id, proxy);
      post(id, { t: 'create', id, userId, channelId, botUserId });
      const listener: DaveListener = {
        userId,
        client: {
          userId,
          // Copied into the message: the gateway may reuse its buffers.
          sendBinary: (op, payload) => post(id, { t: 'binary', id, op, payload: new Uint8Array(payload) }),
          sendJson: (op, d) => post(id, { t: 'json', id, op, d: (d ?? {}) as Record<string, unknown> }),
        },
        epoch: () => proxy.epoch,
        welcomedAt: () => proxy.welcomedAt,
        joinedGroupAt: () => proxy.joinedGroupAt,
        close: () => {
          if (proxy.closed) return;
          proxy.closed = true;
          proxies.delete(id);
          post(id, { t: 'close', id });
        },
      };
      ids.set(listener, id);
      return listener;
    },
    decrypt: (listeners, payload) => {
      const wanted = listeners.flatMap((l) => {
        const id = ids.get(l);
        return id === undefined ? [] : [[l.userId, id] as const];
      });
      const toResults = (raw: Map<number, Uint8Array | string>): Map<string, DecryptResult> =>
        new Map(
          wanted.map(([userId, id]): [string, DecryptResult] => {
            const result = raw.get(id) ?? failure ?? 'EmulatorClosed';
            return [
              userId,
              typeof result === 'string' ? { ok: false, error: result } : { ok: true, opus: bytes(result) },
            ];
          }),
        );
      if (failure || wanted.length === 0) return Promise.resolve(toResults(new Map()));
      const lanes = new Map<number, number[]>();
      for (const [, id] of wanted) lanes.set(id % threads, [...(lanes.get(id % threads) ?? []), id]);
      const copy = new Uint8Array(payload);
      const parts = [...lanes.values()].map((laneIds) => {
        const request = nextRequest++;
        return new Promise<Map<number, Uint8Array | string>>((resolve) => {
          pending.set(request, resolve);
          post(laneIds[0] ?? 0, { t: 'decrypt', request, ids: laneIds, payload: copy });
        });
      });
      return Promise.all(parts).then((maps) => toResults(new Map(maps.flatMap((m) => [...m]))));
    },
    close: async () => {
      for (const proxy of proxies.values()) proxy.closed = true;
      proxies.clear();
      const running = workers.splice(0);
      failAll('EmulatorClosed');
      await Promise.all(running.map((w) => w?.terminate()));
    },
  };
}
