import { describe, expect, it } from 'vitest';
import { encodeTone, writeOggOpus } from '../../emulators/tts/ogg.ts';
import { createOggPacketReader, type OggPacket } from '../../src/audio/ogg-reader.ts';

/** A copy of `bytes` in a buffer of its own (`Buffer.from` would cut it from Node's shared pool). */
const own = (bytes: Buffer): Buffer => {
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
};

// A second of a tone in pages of 10 packets (about 1.3 KB a page): a piece of 1 KiB never holds a whole page.
// In a buffer of its own: a view of one of the pool's slabs would share it with copies the reader makes.
const file = own(
  Buffer.concat(
    writeOggOpus({
      packets: encodeTone({ hz: 440, durationMs: 1_000, frameMs: 20, channels: 1 }),
      channels: 1,
      frameSamples: 960,
      packetsPerPage: 10,
    }),
  ),
);

const read = (pieces: Buffer[]): OggPacket[] => {
  const reader = createOggPacketReader();
  const packets = pieces.flatMap((piece) => reader.push(piece));
  reader.end();
  return packets;
};

/** The file in pieces of `size` bytes, each made by `piece` from its start and end. */
const inPieces = (size: number, piece: (start: number, end: number) => Buffer): Buffer[] => {
  const pieces: Buffer[] = [];
  for (let start = 0; start < file.length; start += size)
    pieces.push(piece(start, Math.min(file.length, start + size)));
  return pieces;
};

describe('createOggPacketReader: pages across pieces', () => {
  const whole = read([file]).map((packet) => packet.data);

  it('reads pieces that lie side by side in one buffer without copying a page: every packet is a view of it', () => {
    const packets = read(inPieces(1_024, (start, end) => file.subarray(start, end)));
    expect(packets.map((packet) => packet.data)).toEqual(whole);
    expect(packets.filter((packet) => packet.data.buffer !== file.buffer)).toEqual([]);
  });

  it('copies pieces of different buffers into a buffer of their own, not a slab of Node’s shared pool', () => {
    const packets = read(inPieces(1_024, (start, end) => own(file.subarray(start, end))));
    expect(packets.map((packet) => packet.data)).toEqual(whole);
    // A page across two pieces is copied with what else is queued: a few KB, where a pool's slab is 64 KiB (8 on
    // Node 20), and would be kept whole by one packet still waiting to play.
    expect(packets.some((packet) => packet.data.buffer.byteLength > 1_024)).toBe(true);
    expect(packets.every((packet) => packet.data.buffer.byteLength <= 4_096)).toBe(true);
  });

  it('reads a file fed a byte at a time, each byte a buffer of its own', () => {
    const packets = read(inPieces(1, (start, end) => own(file.subarray(start, end))));
    expect(packets.map((packet) => packet.data)).toEqual(whole);
  });

  it('joins views of one buffer only where they touch: bytes between two views are not read', () => {
    // Each piece of the file in one buffer, with 16 bytes of 0xff between one piece and the next.
    const spaced = Buffer.alloc(file.length + 16 * Math.ceil(file.length / 1_024), 0xff);
    const pieces = inPieces(1_024, (start, end) => {
      const at = start + 16 * (start / 1_024);
      file.copy(spaced, at, start, end);
      return spaced.subarray(at, at + end - start);
    });
    expect(read(pieces).map((packet) => packet.data)).toEqual(whole);
  });
});
