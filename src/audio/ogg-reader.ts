import { AudioFormatError, describeBytes } from './errors.ts';

/** One packet of an Ogg logical stream, reassembled across pages. */
export interface OggPacket {
  /** The logical stream's serial number. */
  readonly serial: number;
  /** True for the first packet of a logical stream (it came on a beginning-of-stream page). */
  readonly bos: boolean;
  /** True when the packet ends on an end-of-stream page. */
  readonly eos: boolean;
  /** The packet bytes. */
  readonly data: Buffer;
  /** Where the page it ended on ends in the input: the offset of the byte after it. */
  readonly end: number;
}

/** Reads Ogg pages from bytes in any chunking and returns whole packets. */
export interface OggPacketReader {
  /** Adds bytes and returns the packets they complete, in order. @throws AudioFormatError on a bad page. */
  push(chunk: Buffer): OggPacket[];
  /** Declares the end of the input. @throws AudioFormatError when it stopped inside a page or a packet. */
  end(): void;
}

// RFC 3533 §6: 27 fixed header bytes, then the lacing table.
const HEADER_SIZE = 27;
const CAPTURE = Buffer.from('OggS', 'latin1');
const FLAG_CONTINUED = 0x01;
const FLAG_BOS = 0x02;
const FLAG_EOS = 0x04;

interface StreamState {
  /** Parts of a packet whose last segment had lacing 255 at a page end: it goes on in the next page. */
  parts: Buffer[];
  nextSequence: number;
  /** True until the first packet of the stream is emitted: BOS is reported on it. */
  fresh: boolean;
}

/** Makes a streaming Ogg reader that verifies page CRCs and reassembles packets continued across pages. */
export function createOggPacketReader(): OggPacketReader {
  let queue: Buffer[] = [];
  let queued = 0;
  let offset = 0;
  const streams = new Map<number, StreamState>();

  // Contiguous view of the first `size` queued bytes, once that many have arrived (so byte-by-byte input stays
  // linear). Pieces that lie side by side in one buffer, as a read-ahead hands out views of its block in turn, are
  // joined by a wider view of it: a page across two of them was a copy, cut from Node's shared pool, and lived as
  // long as its packets waited to play. In a rush those copies (the clip over again) were promoted and pinned their
  // 64 KiB slabs until a full collection, which the growth of ArrayBuffers then started. Bytes from different
  // buffers are copied, into a buffer of their own.
  const peek = (size: number): Buffer | undefined => {
    if (queued < size) return undefined;
    let first = queue[0];
    if (first === undefined || first.length >= size) return first;
    let joinedCount = 1;
    for (; first.length < size && joinedCount < queue.length; joinedCount++) {
      const next = queue[joinedCount] as Buffer;
      if (next.buffer !== first.buffer || first.byteOffset + first.length !== next.byteOffset) break;
      first = Buffer.from(first.buffer, first.byteOffset, first.length + next.length);
    }
    if (first.length >= size) {
      queue.splice(0, joinedCount, first);
      return first;
    }
    const joined = Buffer.allocUnsafeSlow(queued);
    let at = 0;
    for (const part of queue) at += part.copy(joined, at);
    queue = [joined];
    return joined;
  };

  const consume = (size: number): void => {
    const first = queue[0];
    if (first === undefined) return;
    queue[0] = first.subarray(size);
    if (queue[0].length === 0) queue.shift();
    queued -= size;
    offset += size;
  };

  const readPage = (out: OggPacket[]): boolean => {
    const start = peek(Math.min(CAPTURE.length, queued));
    if (start === undefined || start.length === 0) return false;
    if (!startsWithCapture(start)) {
      if (offset === 0) {
        throw new AudioFormatError(
          'ERR_NOT_OGG',
          `Not an Ogg stream: it starts with ${describeBytes(start.subarray(0, 12))}, not "OggS"`,
        );
      }
      throw new AudioFormatError('ERR_OGG_CORRUPT', `Ogg stream lost page sync at byte ${offset}`);
    }
    const head = peek(HEADER_SIZE);
    if (head === undefined) return false;
    const version = head[4] as number;
    if (version !== 0) {
      throw new AudioFormatError(
        'ERR_OGG_CORRUPT',
        `Ogg page at byte ${offset} has version ${version}, not 0`,
      );
    }
    const segments = head[26] as number;
    const withTable = peek(HEADER_SIZE + segments);
    if (withTable === undefined) return false;
    let bodySize = 0;
    for (let i = HEADER_SIZE; i < HEADER_SIZE + segments; i++) bodySize += withTable[i] as number;
    const pageSize = HEADER_SIZE + segments + bodySize;
    const page = peek(pageSize);
    if (page === undefined) return false;

    const stored = page.readUInt32LE(22);
    const computed = crcOf(page, pageSize);
    if (stored !== computed) {
      throw new AudioFormatError(
        'ERR_OGG_CRC',
        `Ogg page at byte ${offset} has a bad CRC (stored ${hex(stored)}, computed ${hex(computed)})`,
      );
    }
    splitPage(page, segments, offset + pageSize, out);
    consume(pageSize);
    return true;
  };

  /** Splits the page that starts `page` into packets (its lacing table says where it ends; more bytes may follow). */
  const splitPage = (page: Buffer, segments: number, end: number, out: OggPacket[]): void => {
    const flags = page[5] as number;
    const serial = page.readUInt32LE(14);
    const sequence = page.readUInt32LE(18);
    let stream = streams.get(serial);
    if (stream === undefined || (flags & FLAG_BOS) !== 0) {
      stream = { parts: [], nextSequence: sequence, fresh: true };
      streams.set(serial, stream);
    }
    if (sequence !== stream.nextSequence) {
      throw new AudioFormatError(
        'ERR_OGG_CORRUPT',
        `Ogg page at byte ${offset} is page ${sequence} of stream ${serial}; expected page ${stream.nextSequence}`,
      );
    }
    stream.nextSequence = sequence + 1;
    const continued = (flags & FLAG_CONTINUED) !== 0;
    if (!continued && stream.parts.length > 0) {
      throw new AudioFormatError(
        'ERR_OGG_CORRUPT',
        `Ogg page at byte ${offset} drops a packet that the previous page said continues`,
      );
    }
    // A stream picked up mid-packet: the continuation of a packet never seen is skipped.
    let skipping = continued && stream.parts.length === 0;

    let position = HEADER_SIZE + segments;
    let partStart = position;
    const lastPacketIndex = lastCompleteSegment(page, segments);
    for (let i = 0; i < segments; i++) {
      const lacing = page[HEADER_SIZE + i] as number;
      position += lacing;
      if (lacing === 255) continue;
      const part = page.subarray(partStart, position);
      partStart = position;
      if (skipping) {
        skipping = false;
        continue;
      }
      stream.parts.push(part);
      const data = stream.parts.length === 1 ? part : Buffer.concat(stream.parts);
      stream.parts = [];
      const eos = (flags & FLAG_EOS) !== 0 && i === lastPacketIndex;
      out.push({ serial, bos: stream.fresh, eos, data, end });
      stream.fresh = false;
    }
    if (partStart < position && !skipping) stream.parts.push(page.subarray(partStart, position));
    if ((flags & FLAG_EOS) !== 0) streams.delete(serial);
  };

  return {
    push(chunk) {
      if (chunk.length > 0) {
        queue.push(chunk);
        queued += chunk.length;
      }
      const out: OggPacket[] = [];
      while (readPage(out)) {
        // Each iteration consumed one whole page.
      }
      return out;
    },
    end() {
      if (queued > 0) {
        throw new AudioFormatError(
          'ERR_TRUNCATED',
          `Ogg stream ended inside a page (${queued} bytes left over at byte ${offset})`,
        );
      }
      for (const [serial, stream] of streams) {
        if (stream.parts.length > 0) {
          throw new AudioFormatError(
            'ERR_TRUNCATED',
            `Ogg stream ${serial} ended inside a packet continued from its last page`,
          );
        }
      }
    },
  };
}

function lastCompleteSegment(page: Buffer, segments: number): number {
  for (let i = segments - 1; i >= 0; i--) if (page[HEADER_SIZE + i] !== 255) return i;
  return -1;
}

/** Whether `bytes` (1–4 of them or more) start as "OggS" does, as far as they go. */
function startsWithCapture(bytes: Buffer): boolean {
  const n = Math.min(CAPTURE.length, bytes.length);
  for (let i = 0; i < n; i++) if (bytes[i] !== CAPTURE[i]) return false;
  return true;
}

function hex(value: number): string {
  return `0x${value.toString(16).padStart(8, '0')}`;
}

// Ogg's CRC-32: polynomial 0x04C11DB7, MSB first, initial value 0, no final XOR (RFC 3533 §6). tk[b] (k = 0–3) is
// the CRC of byte b followed by k zero bytes, for reading four bytes a step ("slicing by 4").
const CRC_TABLES = (() => {
  const tables = [0, 1, 2, 3].map(() => new Uint32Array(256));
  const [t0, t1, t2, t3] = tables as [Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let bit = 0; bit < 8; bit++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    t0[i] = r >>> 0;
  }
  for (let i = 0; i < 256; i++) {
    t1[i] = ((t0[i] as number) << 8) ^ (t0[(t0[i] as number) >>> 24] as number);
    t2[i] = ((t1[i] as number) << 8) ^ (t0[(t1[i] as number) >>> 24] as number);
    t3[i] = ((t2[i] as number) << 8) ^ (t0[(t2[i] as number) >>> 24] as number);
  }
  return { t0, t1, t2, t3 };
})();

/** Ogg page checksum, computed with the page's own CRC field (bytes 22–25) taken as zero. */
export function oggCrc(page: Buffer): number {
  return crcOf(page, page.length);
}

/**
 * {@link oggCrc} of the first `length` bytes of `bytes`: the bytes before the CRC field, four zeros in its place, then
 * the rest four bytes a step (it runs over every byte Herald plays).
 */
function crcOf(bytes: Buffer, length: number): number {
  const { t0, t1, t2, t3 } = CRC_TABLES;
  let crc = 0;
  const field = Math.min(22, length);
  for (let i = 0; i < field; i++)
    crc = (crc << 8) ^ (t0[((crc >>> 24) ^ (bytes[i] as number)) & 0xff] as number);
  for (let i = field; i < Math.min(26, length); i++) crc = (crc << 8) ^ (t0[(crc >>> 24) & 0xff] as number);
  let i = 26;
  for (; i + 4 <= length; i += 4) {
    crc ^=
      ((bytes[i] as number) << 24) |
      ((bytes[i + 1] as number) << 16) |
      ((bytes[i + 2] as number) << 8) |
      (bytes[i + 3] as number);
    crc =
      (t3[crc >>> 24] as number) ^
      (t2[(crc >>> 16) & 0xff] as number) ^
      (t1[(crc >>> 8) & 0xff] as number) ^
      (t0[crc & 0xff] as number);
  }
  for (; i < length; i++) crc = (crc << 8) ^ (t0[((crc >>> 24) ^ (bytes[i] as number)) & 0xff] as number);
  return crc >>> 0;
}
