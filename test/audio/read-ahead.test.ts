/** The read-ahead buffer between a paid TTS download and the player (src/audio/read-ahead.ts). */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ARRIVALS_KEPT, PIECE_BYTES, ReadAhead } from '../../src/audio/read-ahead.ts';
import { randomChunks } from './helpers.ts';

/** Reads whatever `stream` has ready right now, piece by piece, without waiting for more. */
function readReady(stream: ReadAhead): Buffer[] {
  const pieces: Buffer[] = [];
  for (let piece = stream.read() as Buffer | null; piece; piece = stream.read() as Buffer | null)
    pieces.push(piece);
  return pieces;
}

/**
 * Writes `chunks` to `source`, reading what `ahead` holds after every `readEvery`-th, so pieces end mid-block and
 * blocks fill after a reader emptied them; then ends the source and returns every piece read, in order.
 */
async function writeAll(
  source: PassThrough,
  ahead: ReadAhead,
  chunks: Buffer[],
  readEvery: number,
): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (const [i, chunk] of chunks.entries()) {
    source.write(chunk);
    if (i % readEvery === 0) {
      await tick();
      out.push(...readReady(ahead));
    }
  }
  source.end();
  ahead.on('data', (piece: Buffer) => out.push(piece));
  await once(ahead, 'end');
  return out;
}

describe('ReadAhead', () => {
  it('hands a reader that fell behind everything received since, in one piece per block', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1 << 20, blockBytes: 4096, pieceBytes: 1 << 20 });
    const pages = Array.from({ length: 100 }, (_, i) => Buffer.alloc(30, i));
    for (const page of pages) source.write(page);
    await tick();
    expect(ahead.held).toBe(3000);

    const pieces = readReady(ahead);
    expect(pieces).toHaveLength(1);
    expect(Buffer.concat(pieces).equals(Buffer.concat(pages))).toBe(true);
    expect(ahead.held).toBe(0);
  });

  it('remembers when each of its first chunks arrived, not when it was read', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1 << 20 });
    expect(ahead.arrivedAt(0)).toBeUndefined();
    const before = performance.now();
    source.write(Buffer.alloc(10));
    await tick();
    const first = ahead.arrivedAt(0) as number;
    expect(first).toBeGreaterThanOrEqual(before);
    await new Promise((resolve) => setTimeout(resolve, 5));
    source.write(Buffer.alloc(10));
    await tick();
    readReady(ahead);
    // Bytes 0–9 came first, 10–19 at least 5 ms later; byte 20 has not come.
    expect(ahead.arrivedAt(9)).toBe(first);
    expect(ahead.arrivedAt(10)).toBeGreaterThanOrEqual(first + 4);
    expect(ahead.arrivedAt(19)).toBe(ahead.arrivedAt(10));
    expect(ahead.arrivedAt(20)).toBeUndefined();
  });

  it('forgets nothing it remembered, and remembers only the first chunks', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1 << 20 });
    for (let i = 0; i < ARRIVALS_KEPT + 5; i++) {
      source.write(Buffer.alloc(1));
      await tick();
    }
    expect(ahead.arrivedAt(ARRIVALS_KEPT - 1)).toBeTypeOf('number');
    expect(ahead.arrivedAt(ARRIVALS_KEPT)).toBeUndefined();
  });

  it('coalesces for a piped reader that is busy, as the Ogg reader is while the player holds it back', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1 << 20, pieceBytes: 1 << 20 });
    const writes: number[] = [];
    let release: () => void = () => {};
    const busy = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _encoding, callback) {
        writes.push(chunk.length);
        // The first write is held until released: everything after it arrives while the reader is busy.
        if (writes.length === 1) release = callback;
        else callback();
      },
    });
    ahead.pipe(busy);
    source.write(Buffer.alloc(30));
    await tick();
    for (let i = 0; i < 99; i++) source.write(Buffer.alloc(30));
    await tick();
    release();
    source.end();
    await once(busy, 'finish');
    expect(writes.reduce((a, b) => a + b, 0)).toBe(3000);
    expect(writes.length).toBeLessThanOrEqual(3);
  });

  it('hands out at most a piece per read (a few Ogg pages by default), in order', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1 << 20, blockBytes: 4096 });
    const pages = Array.from({ length: 100 }, (_, i) => Buffer.alloc(30, i));
    for (const page of pages) source.write(page);
    await tick();

    const pieces = readReady(ahead);
    expect(Math.max(...pieces.map((piece) => piece.length))).toBe(PIECE_BYTES);
    expect(pieces).toHaveLength(Math.ceil(3000 / PIECE_BYTES));
    expect(Buffer.concat(pieces).equals(Buffer.concat(pages))).toBe(true);
    expect(ahead.held).toBe(0);
  });

  it('gives a waiting reader each chunk as it comes', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1 << 20 });
    const got: Buffer[] = [];
    ahead.on('data', (piece: Buffer) => got.push(piece));
    source.write(Buffer.from('one'));
    await tick();
    expect(Buffer.concat(got).toString()).toBe('one');
    source.write(Buffer.from('two'));
    await tick();
    expect(Buffer.concat(got).toString()).toBe('onetwo');
    source.end();
    await once(ahead, 'end');
  });

  it('keeps every byte in order across blocks, whatever the chunking and the reading pace', async () => {
    const data = randomBytes(50_000);
    for (const seed of [1, 2, 3]) {
      const source = new PassThrough();
      const ahead = new ReadAhead(source, { limitBytes: 1 << 20, blockBytes: 1000 });
      const out = await writeAll(source, ahead, randomChunks(data, seed, 2500), seed + 2);
      expect(Buffer.concat(out).equals(data)).toBe(true);
    }
  });

  it('keeps a chunk of a block or more uncopied, in order with the chunks it copies', async () => {
    const data = randomBytes(60_000);
    for (const seed of [4, 5, 6]) {
      const source = new PassThrough();
      const ahead = new ReadAhead(source, { limitBytes: 1 << 20, blockBytes: 1000 });
      // Each chunk a buffer of its own, as a socket's reads are: the large ones are kept as they came.
      const chunks = randomChunks(data, seed, 2500).map((chunk) => {
        const own = Buffer.allocUnsafeSlow(chunk.length);
        chunk.copy(own);
        return own;
      });
      const out = await writeAll(source, ahead, chunks, seed - 2);
      expect(Buffer.concat(out).equals(data)).toBe(true);
      const large = new Set(chunks.filter((chunk) => chunk.length >= 1000).map((chunk) => chunk.buffer));
      const small = new Set(chunks.filter((chunk) => chunk.length < 1000).map((chunk) => chunk.buffer));
      expect(large.size).toBeGreaterThan(5);
      expect(out.filter((piece) => large.has(piece.buffer as ArrayBuffer)).length).toBeGreaterThan(
        large.size,
      );
      expect(out.some((piece) => small.has(piece.buffer as ArrayBuffer))).toBe(false);
    }
  });

  it('copies a large chunk that is a small view of a larger buffer, rather than keep that buffer alive', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1 << 20, blockBytes: 1000 });
    const whole = randomBytes(10_000);
    const view = whole.subarray(2000, 4000);
    source.end(view);
    const out: Buffer[] = [];
    ahead.on('data', (piece: Buffer) => out.push(piece));
    await once(ahead, 'end');
    expect(Buffer.concat(out).equals(view)).toBe(true);
    expect(out.some((piece) => piece.buffer === whole.buffer)).toBe(false);
  });

  it('never writes over a piece it has handed out', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1 << 20, blockBytes: 64 });
    const kept: { piece: Buffer; copy: Buffer }[] = [];
    for (let i = 0; i < 20; i++) {
      source.write(Buffer.alloc(24, i));
      await tick();
      for (const piece of readReady(ahead)) kept.push({ piece, copy: Buffer.from(piece) });
    }
    expect(kept.length).toBeGreaterThan(0);
    for (const { piece, copy } of kept) expect(piece.equals(copy)).toBe(true);
  });

  it('pauses the source past its limit and resumes it once the reader has taken most of it', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1000, blockBytes: 256 });
    for (let i = 0; i < 10; i++) source.write(Buffer.alloc(200, i));
    await tick();
    expect(source.isPaused()).toBe(true);
    expect(ahead.held).toBeLessThan(1200);

    const first = readReady(ahead);
    await tick();
    expect(source.isPaused()).toBe(false);
    source.end();
    const rest: Buffer[] = [];
    ahead.on('data', (piece: Buffer) => rest.push(piece));
    await once(ahead, 'end');
    expect(Buffer.concat([...first, ...rest]).length).toBe(2000);
  });

  it("ends with its source and fails with its source's error", async () => {
    const ended = new PassThrough();
    const fine = new ReadAhead(ended, { limitBytes: 1000 });
    ended.end(Buffer.from('all'));
    const got: Buffer[] = [];
    fine.on('data', (piece: Buffer) => got.push(piece));
    await once(fine, 'end');
    expect(Buffer.concat(got).toString()).toBe('all');

    const failing = new PassThrough();
    const broken = new ReadAhead(failing, { limitBytes: 1000 });
    const error = new Error('the service reset the connection');
    failing.destroy(error);
    const [seen] = await once(broken, 'error');
    expect(seen).toBe(error);
  });

  it('lets go of its source when destroyed, leaving it paused for its owner to end', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 1000 });
    source.write(Buffer.from('heard'));
    await tick();
    ahead.destroy();
    await once(ahead, 'close');
    expect(source.listenerCount('data')).toBe(0);
    expect(source.isPaused()).toBe(true);
    expect(source.destroyed).toBe(false);
  });
});
