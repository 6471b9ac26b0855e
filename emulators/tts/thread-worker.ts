/** The TTS emulator's own thread (`startTtsEmulatorThread` in thread.ts): starts it, answers the main thread. */
import { parentPort, workerData } from 'node:worker_threads';
import { startTtsEmulator } from './index.ts';
import type { FromThread, ToThread } from './thread.ts';
import type { TtsEmulatorOptions } from './types.ts';

const port = parentPort;
if (!port) throw new Error('thread-worker.ts runs as a worker thread');
const emulator = await startTtsEmulator(workerData as TtsEmulatorOptions);

const answer = async (message: ToThread): Promise<unknown> => {
  switch (message.t) {
    case 'configure':
      emulator.configure(message.options);
      return undefined;
    case 'requests':
      return emulator.requests.slice(message.from);
    case 'count':
      return emulator.requests.length;
    case 'close':
      await emulator.close();
      return undefined;
  }
};

port.on('message', (message: ToThread) => {
  answer(message).then(
    (value) => port.postMessage({ t: 'answer', id: message.id, value } satisfies FromThread),
    (error: unknown) =>
      port.postMessage({
        t: 'answer',
        id: message.id,
        error: error instanceof Error ? error.message : String(error),
      } satisfies FromThread),
  );
});
port.postMessage({
  t: 'ready',
  baseUrl: emulator.baseUrl,
  apiKey: emulator.apiKey,
  speakers: [...emulator.speakers],
} satisfies FromThread);
