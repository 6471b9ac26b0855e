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

  // Contiguous view of the first `size` queued bytes; concatenates only once that many have arrived, so
  // byte-by-byte input stays linear.
  const peek = (size: number): Buffer | undefined => {
    if (queued < size) return undefined;
    const first = queue[0];
    if (first !== undefined && first.length >= size) return first;
    const joined = Buffer.concat(queue);
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
    const prefix = start.subarray(0, Math.min(CAPTURE.length, start.length));
    if (!prefix.equals(CAPTURE.subarray(0, prefix.length))) {
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
    const version = head.readUInt8(4);
    if (version !== 0) {
      throw new AudioFormatError(
        'ERR_OGG_CORRUPT',
        `Ogg page at byte ${offset} has version ${version}, not 0`,
      );
    }
    const segments = head.readUInt8(26);
    const withTable = peek(HEADER_SIZE + segments);
    if (withTable === undefined) return false;
    let bodySize = 0;
    for (let i = 0; i < segments; i++) bodySize += withTable.readUInt8(HEADER_SIZE + i);
    const pageSize = HEADER_SIZE + segments + bodySize;
    const page = peek(pageSize);
    if (page === undefined) return false;

    const stored = page.readUInt32LE(22);
    const computed = oggCrc(page.subarray(0, pageSize));
    if (stored !== computed) {
      throw new AudioFormatError(
        'ERR_OGG_CRC',
        `Ogg page at byte ${offset} has a bad CRC (stored ${hex(stored)}, computed ${hex(computed)})`,
      );
    }
    splitPage(page.subarray(0, pageSize), segments, out);
    consume(pageSize);
    return true;
  };

  const splitPage = (page: Buffer, segments: number, out: OggPacket[]): void => {
    const flags = page.readUInt8(5);
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
      const lacing = page.readUInt8(HEADER_SIZE + i);
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
      out.push({ serial, bos: stream.fresh, eos, data });
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
  for (let i = segments - 1; i >= 0; i--) if (page.readUInt8(HEADER_SIZE + i) !== 255) return i;
  return -1;
}

function hex(value: number): string {
  return `0x${value.toString(16).padStart(8, '0')}`;
}

// Ogg's CRC-32: polynomial 0x04C11DB7, MSB first, initial value 0, no final XOR (RFC 3533 §6).
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let bit = 0; bit < 8; bit++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

/** Ogg page checksum, computed with the page's own CRC field (bytes 22–25) taken as zero. */
export function oggCrc(page: Buffer): number {
  let crc = 0;
  for (let i = 0; i < page.length; i++) {
    const byte = i >= 22 && i < 26 ? 0 : (page[i] ?? 0);
    crc = ((crc << 8) ^ (CRC_TABLE[((crc >>> 24) ^ byte) & 0xff] ?? 0)) >>> 0;
  }
  return crc;
}
