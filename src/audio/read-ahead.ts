import { Readable } from 'node:stream';

/** Options of {@link ReadAhead}. */
export interface ReadAheadOptions {
  /** The source is paused while this many bytes wait unread, and resumed below half of it. */
  readonly limitBytes: number;
  /** Bytes are kept in blocks of this size (a chunk larger than a block gets a block of its own size). */
  readonly blockBytes?: number;
  /** A read hands out at most this many bytes (default {@link PIECE_BYTES}). */
  readonly pieceBytes?: number;
}

const BLOCK_BYTES = 16 * 1024;

/**
 * Chunks whose arrival a ReadAhead remembers, for judging how fast a stream's start came (src/audio/start-hold.ts):
 * a few seconds of speech from a service that sends a page at a time, 2 KiB of numbers per stream.
 */
export const ARRIVALS_KEPT = 128;

/**
 * What one read hands out at most: a few Ogg pages of speech (80-200 bytes each). The Ogg packetizer takes 1 KiB
 * at a time, so a read-ahead in front of it fills to its limit; a piece of everything held (a second of speech
 * and more) would be demuxed in one call, its packets kept alive until the player takes them. A small piece keeps
 * the demuxing at the pace of playback (alone it did not remove P4's burst in `npm run bench`; the packetizer's
 * write buffer did, see src/audio/ogg-opus.ts).
 */
export const PIECE_BYTES = 1024;

/**
 * A read-ahead buffer for a byte stream: it reads `source` as fast as the source sends (up to `limitBytes` held),
 * and hands its reader what it holds in pieces of at most `pieceBytes`, each as one view.
 *
 * A PassThrough would do the same with one buffered object per chunk received. A TTS service streaming Ogg sends
 * one small page per chunk, faster than real time, so an utterance read ahead was hundreds of small objects that
 * lived as long as the utterance played (each one copied by every young-generation GC until promoted) and that the
 * Ogg reader then took one at a time. Here a chunk is copied into an append-only block and dies young; a piece
 * handed to the reader is a view of bytes already written, which nothing writes again.
 */
export class ReadAhead extends Readable {
  readonly #source: Readable;
  readonly #limitBytes: number;
  readonly #blockBytes: number;
  readonly #pieceBytes: number;
  /** Append-only blocks; reading starts at #readAt in the first, writing continues at #writeAt in the last. */
  readonly #blocks: Buffer[] = [];
  #readAt = 0;
  #writeAt = 0;
  #held = 0;
  #sourceEnded = false;
  /** The reader asked while nothing was held: the next bytes go to it at once. */
  #wanted = false;
  /** Bytes received from the source in all. */
  #received = 0;
  /** The first {@link ARRIVALS_KEPT} chunks received: where each ended (offset past its last byte), and when. */
  readonly #arrivalEnds: number[] = [];
  readonly #arrivalTimes: number[] = [];

  constructor(source: Readable, options: ReadAheadOptions) {
    // A small high-water mark: bytes wait in the blocks, not in the Readable's own list, so they coalesce.
    super({ highWaterMark: 1 });
    this.#source = source;
    this.#limitBytes = options.limitBytes;
    this.#blockBytes = options.blockBytes ?? BLOCK_BYTES;
    this.#pieceBytes = options.pieceBytes ?? PIECE_BYTES;
    source.on('data', this.#onData);
    source.once('end', this.#onEnd);
    source.once('error', this.#onError);
  }

  /**
   * When the byte at `offset` (from the start of the source) arrived, by `performance.now()`: undefined when it has
   * not, or came after the first {@link ARRIVALS_KEPT} chunks. What a reader learns of how fast the source sends,
   * however late it reads.
   */
  arrivedAt(offset: number): number | undefined {
    const ends = this.#arrivalEnds;
    let low = 0;
    let high = ends.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((ends[middle] as number) > offset) high = middle;
      else low = middle + 1;
    }
    return offset >= 0 ? this.#arrivalTimes[low] : undefined;
  }

  /** Bytes received and not yet handed to the reader. */
  get held(): number {
    return this.#held;
  }

  override _read(): void {
    if (this.#held === 0) {
      if (this.#sourceEnded) this.push(null);
      else this.#wanted = true;
      return;
    }
    this.#wanted = false;
    this.push(this.#take());
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#source.off('data', this.#onData);
    this.#source.off('end', this.#onEnd);
    this.#source.off('error', this.#onError);
    // As a PassThrough that was piped to: the source is left paused, for its owner to end (an abort, a skip).
    this.#source.pause();
    this.#blocks.length = 0;
    this.#held = 0;
    callback(error);
  }

  readonly #onData = (chunk: Buffer): void => {
    this.#received += chunk.length;
    if (this.#arrivalEnds.length < ARRIVALS_KEPT) {
      this.#arrivalEnds.push(this.#received);
      this.#arrivalTimes.push(performance.now());
    }
    this.#append(chunk);
    if (this.#held >= this.#limitBytes) this.#source.pause();
    if (this.#wanted) {
      this.#wanted = false;
      this.push(this.#take());
    }
  };

  readonly #onEnd = (): void => {
    this.#sourceEnded = true;
    if (this.#wanted && this.#held === 0) {
      this.#wanted = false;
      this.push(null);
    }
  };

  readonly #onError = (error: Error): void => {
    this.destroy(error);
  };

  #append(chunk: Buffer): void {
    if (chunk.length >= this.#blockBytes && chunk.length * 2 >= chunk.buffer.byteLength) {
      this.#adopt(chunk);
      return;
    }
    let from = 0;
    while (from < chunk.length) {
      let block = this.#blocks.at(-1);
      if (!block || this.#writeAt === block.length) {
        // A block is never reused: the reader may still hold views of it.
        if (this.#held === 0) this.#blocks.length = 0;
        // Slow: a block of its own. One of Node's shared pool (blocks under 32 KiB on Node 24) would keep its whole
        // 64 KiB slab alive as long as the block, with whatever else was cut from it.
        block = Buffer.allocUnsafeSlow(Math.max(this.#blockBytes, chunk.length - from));
        this.#blocks.push(block);
        this.#writeAt = 0;
        if (this.#blocks.length === 1) this.#readAt = 0;
      }
      const copied = chunk.copy(block, this.#writeAt, from);
      this.#writeAt += copied;
      this.#held += copied;
      from += copied;
    }
  }

  /**
   * Keeps a chunk of a block's size or more as a block of its own, uncopied: a service that sends the clip at once
   * arrives in chunks of up to 64 KiB, and a copy would allocate the clip twice over. Unless the chunk is a small view
   * of a larger buffer, which it would keep alive whole. A stream's producer never writes a chunk it has passed on.
   */
  #adopt(chunk: Buffer): void {
    const last = this.#blocks.length - 1;
    if (this.#held === 0) this.#blocks.length = 0;
    // A partly written last block is trimmed to what it holds: only the last block is read up to #writeAt.
    else if ((this.#blocks[last] as Buffer).length > this.#writeAt)
      this.#blocks[last] = (this.#blocks[last] as Buffer).subarray(0, this.#writeAt);
    this.#blocks.push(chunk);
    if (this.#blocks.length === 1) this.#readAt = 0;
    this.#writeAt = chunk.length;
    this.#held += chunk.length;
  }

  /** The held bytes of the first block (all of them when it is also the last), up to a piece, as one view. */
  #take(): Buffer {
    // A first block read to its end (the reader emptied it just as it filled) holds nothing more.
    if (this.#blocks.length > 1 && this.#readAt === (this.#blocks[0] as Buffer).length) {
      this.#blocks.shift();
      this.#readAt = 0;
    }
    const first = this.#blocks[0] as Buffer;
    const last = this.#blocks.length === 1;
    const filled = last ? this.#writeAt : first.length;
    const end = Math.min(filled, this.#readAt + this.#pieceBytes);
    const piece = first.subarray(this.#readAt, end);
    this.#held -= piece.length;
    if (!last && end === first.length) {
      this.#blocks.shift();
      this.#readAt = 0;
    } else {
      this.#readAt = end;
    }
    if (this.#source.isPaused() && this.#held < this.#limitBytes / 2 && !this.#sourceEnded)
      this.#source.resume();
    return piece;
  }
}
