/** Writing a response body over time: timed chunks paced at a realtime factor, with stall, reset and truncate. */
import type { ServerResponse } from 'node:http';
import type { TimedChunk } from './audio.ts';
import type { Fault } from './types.ts';

/** Resolves after `ms` (never, for Infinity) or as soon as `signal` aborts. */
export function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = Number.isFinite(ms) ? setTimeout(done, Math.max(0, ms)) : undefined;
    signal.addEventListener('abort', done, { once: true });
  });
}

function write(res: ServerResponse, data: Buffer, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || data.length === 0) return resolve();
    const aborted = (): void => resolve();
    signal.addEventListener('abort', aborted, { once: true });
    // Resolving on the write callback means the bytes reached the socket, which a following reset relies on.
    res.write(data, () => {
      // One listener per write left on the signal made an utterance of 500 pages cost 500 listeners, and each add
      // and remove on it slower: a fifth of the emulated world's CPU while 200 streams were served.
      signal.removeEventListener('abort', aborted);
      resolve();
    });
  });
}

/** Writes `chunks` as they fall due at `speed` (Infinity: at once), applying the faults, then ends the response. */
export async function streamChunks(
  res: ServerResponse,
  chunks: TimedChunk[],
  speed: number,
  stall: Extract<Fault, { kind: 'stall' }> | undefined,
  reset: Extract<Fault, { kind: 'reset' }> | undefined,
  signal: AbortSignal,
  truncate?: Extract<Fault, { kind: 'truncate' }>,
): Promise<void> {
  let start = Date.now();
  let sent = 0;
  let stalled = false;
  for (const chunk of chunks) {
    const due = Number.isFinite(speed) && speed > 0 ? start + chunk.atMs / speed : 0;
    if (due > Date.now()) await wait(due - Date.now(), signal);
    if (signal.aborted) return;
    let data = chunk.data;
    if (stall && !stalled && sent + data.length >= stall.afterBytes) {
      const head = data.subarray(0, Math.max(0, stall.afterBytes - sent));
      await write(res, head, signal);
      sent += head.length;
      data = data.subarray(head.length);
      stalled = true;
      const before = Date.now();
      await wait(stall.ms, signal);
      if (signal.aborted) return;
      // Pacing resumes from where it stopped instead of bursting to catch up.
      start += Date.now() - before;
    }
    if (reset && sent + data.length >= reset.afterBytes) {
      await write(res, data.subarray(0, Math.max(0, reset.afterBytes - sent)), signal);
      res.socket?.destroy();
      return;
    }
    if (truncate && sent + data.length >= truncate.afterBytes) {
      await write(res, data.subarray(0, Math.max(0, truncate.afterBytes - sent)), signal);
      if (!signal.aborted) res.end();
      return;
    }
    await write(res, data, signal);
    sent += data.length;
  }
  if (!signal.aborted) res.end();
}
