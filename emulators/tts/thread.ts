/**
 * The TTS emulator on a thread of its own, for the benchmark: on Discord the TTS service is another company's
 * machines, and in one thread with the emulated Discord its writes (one every 20 ms to each of hundreds of
 * downloads) held the gateway, REST and interactions that answer Herald. Here it keeps its own event loop (the
 * kernel schedules the thread apart; its CPU still counts as the emulated world's). The handle has what the
 * benchmark reads, asynchronously: the recorded requests, settings, closing. Tests use {@link startTtsEmulator}.
 */
import { Worker } from 'node:worker_threads';
import type { EmulatedSpeaker } from './speakers.ts';
import type { RecordedRequest, TtsEmulator, TtsEmulatorOptions } from './types.ts';

/** What the benchmark asks of the TTS emulator, wherever it runs. */
export interface TtsEmulatorHandle {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly speakers: readonly EmulatedSpeaker[];
  /** Where it runs: `thread` (its own, {@link startTtsEmulatorThread}) or `main` (the caller's). */
  readonly runsOn: 'thread' | 'main';
  configure(options: Parameters<TtsEmulator['configure']>[0]): Promise<void>;
  /** The requests recorded from index `from` (default 0) on, in arrival order. */
  requests(from?: number): Promise<readonly RecordedRequest[]>;
  /** How many requests it has recorded. */
  requestCount(): Promise<number>;
  close(): Promise<void>;
}

/** Main thread → worker; every call is answered by a {@link FromThread} with its `id`. */
export type ToThread =
  | { id: number; t: 'configure'; options: Parameters<TtsEmulator['configure']>[0] }
  | { id: number; t: 'requests'; from: number }
  | { id: number; t: 'count' }
  | { id: number; t: 'close' };

/** A {@link ToThread} before its id is given. */
type Call = ToThread extends infer T ? (T extends unknown ? Omit<T, 'id'> : never) : never;

/** Worker → main thread. */
export type FromThread =
  | { t: 'ready'; baseUrl: string; apiKey: string; speakers: EmulatedSpeaker[] }
  | { t: 'answer'; id: number; value?: unknown; error?: string };

/** Starts the TTS emulator in a worker thread named `tts-service` (also its OS thread name). */
export async function startTtsEmulatorThread(options: TtsEmulatorOptions = {}): Promise<TtsEmulatorHandle> {
  const worker = new Worker(new URL('./thread-worker.ts', import.meta.url), {
    name: 'tts-service',
    workerData: options,
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let failure: Error | undefined;
  const fail = (error: Error): void => {
    failure = error;
    for (const call of pending.values()) call.reject(error);
    pending.clear();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the TTS emulator's thread exited (code ${code})`)));
  const ready = await new Promise<Extract<FromThread, { t: 'ready' }>>((resolve, reject) => {
    worker.once('error', reject);
    worker.on('message', (message: FromThread) => {
      if (message.t === 'ready') {
        resolve(message);
        return;
      }
      const call = pending.get(message.id);
      pending.delete(message.id);
      if (message.error === undefined) call?.resolve(message.value);
      else call?.reject(new Error(message.error));
    });
  });
  const ask = <T>(message: Call): Promise<T> => {
    if (failure) return Promise.reject(failure);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      worker.postMessage({ ...message, id });
    });
  };
  return {
    baseUrl: ready.baseUrl,
    apiKey: ready.apiKey,
    speakers: ready.speakers,
    runsOn: 'thread',
    configure: (o) => ask({ t: 'configure', options: o }),
    requests: (from = 0) => ask({ t: 'requests', from }),
    requestCount: () => ask({ t: 'count' }),
    async close() {
      if (failure) return;
      await ask({ t: 'close' });
      worker.removeAllListeners('exit');
      await worker.terminate();
      failure = new Error('the TTS emulator’s thread is closed');
    },
  };
}

/** The same handle on an emulator running in this thread. */
export function handleOf(emulator: TtsEmulator): TtsEmulatorHandle {
  return {
    baseUrl: emulator.baseUrl,
    apiKey: emulator.apiKey,
    speakers: emulator.speakers,
    runsOn: 'main',
    configure: async (o) => emulator.configure(o),
    requests: async (from = 0) => emulator.requests.slice(from),
    requestCount: async () => emulator.requests.length,
    close: () => emulator.close(),
  };
}
