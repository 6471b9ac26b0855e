import { AudioFormatError } from './errors.ts';

/** An Opus packet split into its frames (RFC 6716 §3). */
export interface OpusPacketInfo {
  /** The TOC configuration number, 0–31: mode (SILK, Hybrid, CELT), bandwidth and frame duration. */
  readonly config: number;
  /** The TOC stereo flag. */
  readonly stereo: boolean;
  /** Duration of each frame in milliseconds: 2.5, 5, 10, 20, 40 or 60. */
  readonly frameMs: number;
  /** The compressed frames, in order; a zero-length frame is a DTX or lost frame. */
  readonly frames: Buffer[];
}

// RFC 6716 §3.1 Table 2, indexed by config: SILK 0–11, Hybrid 12–15, CELT 16–31.
const FRAME_MS: readonly number[] = [
  ...[10, 20, 40, 60, 10, 20, 40, 60, 10, 20, 40, 60],
  ...[10, 20, 10, 20],
  ...[2.5, 5, 10, 20, 2.5, 5, 10, 20, 2.5, 5, 10, 20, 2.5, 5, 10, 20],
];
// RFC 6716 §3.2: no frame is longer than 1275 bytes and no packet lasts more than 120 ms.
const MAX_FRAME_BYTES = 1275;
const MAX_PACKET_MS = 120;

/** Parses an Opus packet's TOC and framing: frame duration (2.5–60 ms), frame count, and the frames (RFC 6716 §3.2). @throws AudioFormatError (`ERR_BAD_OPUS_PACKET`) for a malformed packet. */
export function parseOpusPacket(packet: Buffer): OpusPacketInfo {
  const toc = packet[0];
  if (toc === undefined) throw badPacket('it is empty');
  const config = toc >> 3;
  const stereo = (toc & 0x04) !== 0;
  const frameMs = FRAME_MS[config] ?? 20;
  const code = toc & 0x03;
  const frames: Buffer[] = [];
  const body = packet.subarray(1);

  if (code === 0) {
    frames.push(body);
  } else if (code === 1) {
    if (body.length % 2 !== 0) throw badPacket(`code 1 needs an even payload, got ${body.length} bytes`);
    const half = body.length / 2;
    frames.push(body.subarray(0, half), body.subarray(half));
  } else if (code === 2) {
    const first = readFrameLength(body, 0);
    const rest = body.subarray(first.bytes);
    if (first.length > rest.length) throw badPacket(`code 2 first frame of ${first.length} bytes overruns`);
    frames.push(rest.subarray(0, first.length), rest.subarray(first.length));
  } else {
    frames.push(...parseCode3(body, frameMs));
  }
  for (const frame of frames) {
    if (frame.length > MAX_FRAME_BYTES) throw badPacket(`a frame of ${frame.length} bytes exceeds 1275`);
  }
  return { config, stereo, frameMs, frames };
}

/**
 * How long an Opus packet plays, in ms, from its TOC byte and frame count (RFC 6716 §3.1–3.2), without parsing its
 * frames; 20 when it is too short to tell (a player's frame of silence is 20 ms).
 */
export function opusPacketMs(packet: Buffer): number {
  const toc = packet[0];
  if (toc === undefined) return 20;
  const code = toc & 0x03;
  const frames = code === 0 ? 1 : code < 3 ? 2 : (packet[1] ?? 0) & 0x3f;
  return (FRAME_MS[toc >> 3] ?? 20) * frames || 20;
}

/**
 * True for a packet of one 20 ms frame (code 0), what a TTS service sends nearly always, told from its TOC byte
 * alone without parsing it into frames. @throws AudioFormatError (`ERR_BAD_OPUS_PACKET`) when that frame is longer
 * than RFC 6716 allows.
 */
export function isOne20msFrame(packet: Buffer): boolean {
  const toc = packet[0];
  if (toc === undefined || (toc & 0x03) !== 0 || FRAME_MS[toc >> 3] !== 20) return false;
  if (packet.length - 1 > MAX_FRAME_BYTES)
    throw badPacket(`a frame of ${packet.length - 1} bytes exceeds 1275`);
  return true;
}

function parseCode3(body: Buffer, frameMs: number): Buffer[] {
  const header = body[0];
  if (header === undefined) throw badPacket('code 3 lacks its frame count byte');
  const vbr = (header & 0x80) !== 0;
  const padded = (header & 0x40) !== 0;
  const count = header & 0x3f;
  if (count === 0) throw badPacket('code 3 with a frame count of 0');
  if (count * frameMs > MAX_PACKET_MS) throw badPacket(`${count} frames of ${frameMs} ms exceed 120 ms`);
  let position = 1;
  let padding = 0;
  if (padded) {
    // Each padding-length byte of 255 means 254 bytes of padding and another length byte (§3.2.5).
    for (;;) {
      const value = body[position++];
      if (value === undefined) throw badPacket('code 3 padding length runs past the end');
      padding += value === 255 ? 254 : value;
      if (value !== 255) break;
    }
  }
  const end = body.length - padding;
  if (end < position) throw badPacket(`code 3 padding of ${padding} bytes overruns the packet`);
  const frames: Buffer[] = [];
  if (!vbr) {
    const available = end - position;
    if (available % count !== 0) throw badPacket(`code 3 CBR: ${available} bytes do not split into ${count}`);
    const size = available / count;
    for (let i = 0; i < count; i++)
      frames.push(body.subarray(position + i * size, position + (i + 1) * size));
    return frames;
  }
  const sizes: number[] = [];
  for (let i = 0; i < count - 1; i++) {
    const length = readFrameLength(body.subarray(0, end), position);
    position += length.bytes;
    sizes.push(length.length);
  }
  for (const size of sizes) {
    if (position + size > end) throw badPacket(`code 3 VBR frame of ${size} bytes overruns the packet`);
    frames.push(body.subarray(position, position + size));
    position += size;
  }
  frames.push(body.subarray(position, end));
  return frames;
}

// RFC 6716 §3.2.1: one byte below 252, else two bytes (first + 4 × second).
function readFrameLength(data: Buffer, at: number): { length: number; bytes: number } {
  const first = data[at];
  if (first === undefined) throw badPacket('a frame length runs past the end');
  if (first < 252) return { length: first, bytes: 1 };
  const second = data[at + 1];
  if (second === undefined) throw badPacket('a two-byte frame length runs past the end');
  return { length: first + 4 * second, bytes: 2 };
}

function badPacket(reason: string): AudioFormatError {
  return new AudioFormatError('ERR_BAD_OPUS_PACKET', `Malformed Opus packet: ${reason}`);
}
