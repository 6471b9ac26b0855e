/** Small fakes shared by the audio tests: run a Transform over chunked bytes, capture logs, SILK/CELT packets. */
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import opus from '@discordjs/opus';
import { toneSamples } from '../../emulators/tts/ogg.ts';
import { createLogger, type Logger } from '../../src/log.ts';

/** Splits `data` into chunks of `size` bytes (the last one shorter). */
export function chunked(data: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) out.push(data.subarray(at, at + size));
  return out;
}

/** Splits `data` into chunks of pseudo-random sizes 1–`max` from a fixed seed, so failures reproduce. */
export function randomChunks(data: Buffer, seed: number, max = 300): Buffer[] {
  let state = seed >>> 0 || 1;
  const next = (): number => {
    // xorshift32
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; ) {
    const size = 1 + Math.floor(next() * max);
    out.push(data.subarray(at, at + size));
    at += size;
  }
  return out;
}

/** Feeds `chunks` through `transform` and collects everything it outputs; rejects with its error. */
export async function runTransform<T>(transform: Transform, chunks: readonly Buffer[]): Promise<T[]> {
  const out: T[] = [];
  await pipeline(Readable.from(chunks), transform, async (source: AsyncIterable<T>) => {
    for await (const item of source) out.push(item);
  });
  return out;
}

/** A debug-level logger whose lines are kept as parsed objects. */
export function captureLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

// libopus CTL numbers (opus_defines.h).
const OPUS_SET_APPLICATION = 4000;
const OPUS_APPLICATION_VOIP = 2048;

/** Encodes a mono 48 kHz tone with libopus at `frameMs` per packet. `voip` at 12 kbit/s gives SILK-only packets
 *  whose single frame lasts `frameMs` (TOC configs 0–3); otherwise libopus' default (CELT at 48 kHz). */
export function encodeFrames(o: {
  hz: number;
  durationMs: number;
  frameMs: 10 | 20 | 40 | 60;
  voip: boolean;
}): Buffer[] {
  const encoder = new opus.OpusEncoder(48_000, 1);
  if (o.voip) {
    encoder.applyEncoderCTL(OPUS_SET_APPLICATION, OPUS_APPLICATION_VOIP);
    encoder.setBitrate(12_000);
  }
  const pcm = toneSamples({ hz: o.hz, durationMs: o.durationMs, sampleRate: 48_000, channels: 1 });
  const frame = 48 * o.frameMs;
  const packets: Buffer[] = [];
  // Trailing silence of one frame flushes the encoder's lookahead.
  for (let start = 0; start < pcm.length + 312; start += frame) {
    const buffer = Buffer.alloc(frame * 2);
    const slice = pcm.subarray(start, start + frame);
    Buffer.from(slice.buffer, slice.byteOffset, slice.byteLength).copy(buffer);
    packets.push(encoder.encode(buffer));
  }
  return packets;
}
