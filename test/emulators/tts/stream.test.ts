import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TimedChunk } from '../../../emulators/tts/audio.ts';
import { streamChunks } from '../../../emulators/tts/stream.ts';

/** A response that records each write's bytes and the (fake) time it was made. */
function recordingResponse() {
  const writes: { at: number; bytes: number[] }[] = [];
  let ended = false;
  const res = {
    write: (data: Buffer, done: () => void) => {
      writes.push({ at: Date.now(), bytes: [...data] });
      queueMicrotask(done);
      return true;
    },
    end: () => {
      ended = true;
    },
  };
  return { writes, ended: () => ended, res: res as unknown as ServerResponse };
}

/** Ten one-byte chunks, chunk i due at 5·i ms of audio (byte value i). */
const CHUNKS: TimedChunk[] = Array.from({ length: 10 }, (_, i) => ({ atMs: 5 * i, data: Buffer.of(i) }));

describe('streamChunks', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(() => vi.useRealTimers());

  it('without writeEveryMs: each chunk in a write of its own, as it falls due', async () => {
    const r = recordingResponse();
    const done = streamChunks(r.res, CHUNKS, { speed: 1, signal: new AbortController().signal });
    await vi.runAllTimersAsync();
    await done;
    expect(r.writes).toEqual(CHUNKS.map((chunk, i) => ({ at: chunk.atMs, bytes: [i] })));
    expect(r.ended()).toBe(true);
  });

  it('writeEveryMs: 20 → the first chunk at once, then what fell due in each 20 ms in one write, never early', async () => {
    const r = recordingResponse();
    const done = streamChunks(r.res, CHUNKS, {
      speed: 1,
      writeEveryMs: 20,
      signal: new AbortController().signal,
    });
    await vi.runAllTimersAsync();
    await done;
    expect(r.writes).toEqual([
      { at: 0, bytes: [0] },
      { at: 20, bytes: [1, 2, 3, 4] },
      { at: 40, bytes: [5, 6, 7, 8] },
      { at: 60, bytes: [9] },
    ]);
    for (const write of r.writes) {
      for (const byte of write.bytes) expect(write.at).toBeGreaterThanOrEqual(CHUNKS[byte]?.atMs ?? 0);
    }
    expect(r.ended()).toBe(true);
  });

  it('a fault counted in bytes still cuts at its byte inside a batched write', async () => {
    const r = recordingResponse();
    const done = streamChunks(r.res, CHUNKS, {
      speed: 1,
      writeEveryMs: 20,
      truncate: { kind: 'truncate', afterBytes: 3 },
      signal: new AbortController().signal,
    });
    await vi.runAllTimersAsync();
    await done;
    expect(r.writes.flatMap((write) => write.bytes)).toEqual([0, 1, 2]);
    expect(r.ended()).toBe(true);
  });
});
