/**
 * Reading Ogg Opus in tests. `readOggOpus` is written from RFC 3533/7845 on purpose without sharing code with
 * src/ or with the emulator's writer, so a bug in either cannot hide itself; `demuxWithPrism` runs the demuxer
 * the voice stack really uses.
 */
import prism from 'prism-media';

/** One Ogg page as seen by {@link readOggOpus}. */
export interface OggPageInfo {
  /** Header flag 0x01: the page begins with the rest of a packet from the previous page. */
  continued: boolean;
  /** Granule position (-1n when no packet ends on the page). */
  granule: bigint;
  /** Bytes in the page body. */
  bodyBytes: number;
  /** Header flag 0x02: first page of the stream. */
  bos: boolean;
  /** Header flag 0x04: last page of the stream. */
  eos: boolean;
  /** Page sequence number. */
  sequence: number;
  /** The page's lacing values; a trailing 255 means its last packet continues on the next page. */
  lacing: number[];
}

/** What {@link readOggOpus} found in a complete Ogg Opus stream. */
export interface OggOpusContents {
  head: { channels: number; preSkip: number; inputSampleRate: number };
  /** Audio packets (OpusHead and OpusTags excluded), continued packets reassembled. */
  packets: Buffer[];
  pages: OggPageInfo[];
}

const crcTable = new Uint32Array(256).map((_, n) => {
  let value = n << 24;
  for (let k = 0; k < 8; k++) value = value & 0x80000000 ? (value << 1) ^ 0x04c11db7 : value << 1;
  return value >>> 0;
});

function pageCrc(bytes: Uint8Array, crcOffset: number): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) {
    // The CRC field itself counts as zero bytes (RFC 3533 §6).
    const byte = i >= crcOffset && i < crcOffset + 4 ? 0 : (bytes[i] ?? 0);
    crc = ((crc << 8) ^ (crcTable[((crc >>> 24) ^ byte) & 0xff] ?? 0)) >>> 0;
  }
  return crc;
}

/**
 * Independent Ogg reader (NOT sharing code with src/): verifies CRCs, reassembles continued packets.
 * @throws Error on a bad capture pattern, version, CRC, truncated page, sequence gap or misplaced continuation.
 */
export function readOggOpus(data: Buffer): OggOpusContents {
  const pages: OggPageInfo[] = [];
  const allPackets: Buffer[] = [];
  let partial: Buffer[] | null = null;
  let serial: number | null = null;
  let offset = 0;
  while (offset < data.length) {
    if (data.length - offset < 27) throw new Error(`truncated page header at byte ${offset}`);
    if (data.toString('latin1', offset, offset + 4) !== 'OggS') throw new Error(`no OggS at byte ${offset}`);
    if (data[offset + 4] !== 0) throw new Error(`unknown Ogg version at byte ${offset}`);
    const flags = data.readUInt8(offset + 5);
    const granule = data.readBigInt64LE(offset + 6);
    const pageSerial = data.readUInt32LE(offset + 14);
    const sequence = data.readUInt32LE(offset + 18);
    const storedCrc = data.readUInt32LE(offset + 22);
    const count = data.readUInt8(offset + 26);
    if (data.length - offset < 27 + count) throw new Error(`truncated lacing table at byte ${offset}`);
    const lacing = [...data.subarray(offset + 27, offset + 27 + count)];
    const bodyBytes = lacing.reduce((sum, v) => sum + v, 0);
    const end = offset + 27 + count + bodyBytes;
    if (end > data.length) throw new Error(`truncated page body at byte ${offset}`);
    const crc = pageCrc(data.subarray(offset, end), 22);
    if (crc !== storedCrc) throw new Error(`CRC mismatch on page ${sequence}`);
    if (serial === null) serial = pageSerial;
    else if (serial !== pageSerial)
      throw new Error(`second logical stream (serial ${pageSerial}) not supported`);
    if (sequence !== pages.length)
      throw new Error(`page sequence ${sequence} where ${pages.length} expected`);
    const continued = (flags & 0x01) !== 0;
    if (continued !== (partial !== null)) {
      throw new Error(
        `page ${sequence}: continued flag ${continued} but a packet is ${partial ? '' : 'not '}pending`,
      );
    }
    pages.push({
      continued,
      granule,
      bodyBytes,
      bos: (flags & 0x02) !== 0,
      eos: (flags & 0x04) !== 0,
      sequence,
      lacing,
    });

    let cursor = offset + 27 + count;
    let pieces: Buffer[] = partial ?? [];
    for (const value of lacing) {
      pieces.push(data.subarray(cursor, cursor + value));
      cursor += value;
      if (value < 255) {
        allPackets.push(Buffer.concat(pieces));
        pieces = [];
      }
    }
    partial = lacing.at(-1) === 255 ? pieces : null;
    offset = end;
  }
  if (partial !== null) throw new Error('stream ends inside a packet');

  const [head, tags, ...packets] = allPackets;
  if (head === undefined || head.toString('latin1', 0, 8) !== 'OpusHead' || head.length < 19) {
    throw new Error('first packet is not OpusHead');
  }
  if (tags === undefined || tags.toString('latin1', 0, 8) !== 'OpusTags')
    throw new Error('second packet is not OpusTags');
  return {
    head: {
      channels: head.readUInt8(9),
      preSkip: head.readUInt16LE(10),
      inputSampleRate: head.readUInt32LE(12),
    },
    packets,
    pages,
  };
}

/**
 * prism-media's OggDemuxer (the independent demuxer named by the issue); resolves to the Opus packets.
 * Feeds `data` in chunks of `chunkBytes` (default: whole) and ends the input, so it resolves with whatever the
 * demuxer emitted; rejects on a demuxer error or after `timeoutMs` (default 5000) without an end.
 */
export function demuxWithPrism(
  data: Buffer,
  o: { chunkBytes?: number; timeoutMs?: number } = {},
): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const demuxer = new prism.opus.OggDemuxer();
    const packets: Buffer[] = [];
    const timer = setTimeout(() => {
      demuxer.destroy();
      reject(new Error(`prism OggDemuxer did not finish within ${o.timeoutMs ?? 5000} ms`));
    }, o.timeoutMs ?? 5000);
    demuxer.on('data', (packet: Buffer) => packets.push(packet));
    demuxer.once('error', (error: Error) => {
      clearTimeout(timer);
      reject(error);
    });
    demuxer.once('end', () => {
      clearTimeout(timer);
      resolve(packets);
    });
    const step = o.chunkBytes ?? data.length;
    for (let at = 0; at < data.length; at += Math.max(1, step)) demuxer.write(data.subarray(at, at + step));
    demuxer.end();
  });
}
