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

/** How {@link streamChunks} writes a body. */
export interface StreamOptions {
  /** Realtime factor the chunks fall due at; Infinity: all at once. */
  readonly speed: number;
  /** From this many ms of audio on, the chunks fall due at `slowSpeed` × real time instead (a service slowing down). */
  readonly slowAfterMs?: number;
  readonly slowSpeed?: number;
  /**
   * At most one write per this many ms: what fell due in between goes out in one write, never early. 0: each chunk
   * on its own as it falls due.
   */
  readonly writeEveryMs?: number;
  readonly stall?: Extract<Fault, { kind: 'stall' }> | undefined;
  readonly reset?: Extract<Fault, { kind: 'reset' }> | undefined;
  readonly truncate?: Extract<Fault, { kind: 'truncate' }> | undefined;
  readonly signal: AbortSignal;
}

/** Writes `chunks` as they fall due, applying the faults, then ends the response. */
export async function streamChunks(
  res: ServerResponse,
  chunks: TimedChunk[],
  o: StreamOptions,
): Promise<void> {
  const { speed, stall, reset, truncate, signal } = o;
  const writeEveryMs = o.writeEveryMs ?? 0;
  const paced = Number.isFinite(speed) && speed > 0;
  const slowAfterMs = o.slowSpeed === undefined ? Number.POSITIVE_INFINITY : (o.slowAfterMs ?? 0);
  const slowSpeed = o.slowSpeed ?? speed;
  let start = Date.now();
  // When a chunk is due: at `speed` up to `slowAfterMs` of audio (at once when not paced), at `slowSpeed` after.
  const dueOf = (chunk: TimedChunk): number => {
    if (chunk.atMs <= slowAfterMs) return paced ? start + chunk.atMs / speed : 0;
    return start + (paced ? slowAfterMs / speed : 0) + (chunk.atMs - slowAfterMs) / slowSpeed;
  };
  const truncateAt = truncate && truncationPoint(truncate, chunks);
  let sent = 0;
  let stalled = false;
  let lastWrite = Number.NEGATIVE_INFINITY;
  for (let next = 0; next < chunks.length; ) {
    const first = chunks[next] as TimedChunk;
    const wakeAt = Math.max(dueOf(first), lastWrite + writeEveryMs);
    if (wakeAt > Date.now()) await wait(wakeAt - Date.now(), signal);
    if (signal.aborted) return;
    // This chunk, and (when writes are spaced) every later one already due.
    const now = Date.now();
    let end = next + 1;
    while (writeEveryMs > 0 && end < chunks.length && dueOf(chunks[end] as TimedChunk) <= now) end++;
    let data =
      end - next === 1 ? first.data : Buffer.concat(chunks.slice(next, end).map((chunk) => chunk.data));
    next = end;
    lastWrite = now;
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
    if (truncateAt !== undefined && sent + data.length >= truncateAt) {
      await write(res, data.subarray(0, Math.max(0, truncateAt - sent)), signal);
      if (!signal.aborted) res.end();
      return;
    }
    await write(res, data, signal);
    sent += data.length;
  }
  if (!signal.aborted) res.end();
}

/** The body offset a 'truncate' fault ends at: its bytes, or the last chunk boundary within its fraction. */
function truncationPoint(fault: Extract<Fault, { kind: 'truncate' }>, chunks: TimedChunk[]): number {
  if ('afterBytes' in fault) return fault.afterBytes;
  const total = chunks.reduce((sum, chunk) => sum + chunk.data.length, 0);
  const limit = Math.max(0, Math.min(1, fault.fraction)) * total;
  let at = 0;
  for (const chunk of chunks) {
    if (at + chunk.data.length > limit) break;
    at += chunk.data.length;
  }
  return at;
}
