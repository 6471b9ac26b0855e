import { setImmediate as nextTurn } from 'node:timers/promises';
import opus from '@discordjs/opus';
import { AudioFormatError } from '../audio/errors.ts';
import { createOggPacketReader } from '../audio/ogg-reader.ts';

/** What a Discord voice message says about its audio besides the bytes: its length and its waveform. */
export interface VoiceClipFacts {
  /** The audio's length in seconds (from the last granule position, less the pre-skip: RFC 7845 §4). */
  readonly durationSecs: number;
  /** Base64 of one amplitude byte (0-255) per 100 ms of audio, at most {@link MAX_WAVEFORM_POINTS}. */
  readonly waveform: string;
}

/**
 * Discord's clients sample a voice message's waveform at most once per 100 ms and downsample to at most 256 points
 * (the attachment's `waveform`, discord-api-docs "Voice Messages").
 */
export const MAX_WAVEFORM_POINTS = 256;
/** One waveform point per this much audio, below {@link MAX_WAVEFORM_POINTS} points. */
export const WAVEFORM_POINT_MS = 100;

// Opus always decodes at 48 kHz whatever OpusHead's informational input rate says (RFC 7845 §5.1).
const RATE = 48_000;
const OPUS_HEAD = Buffer.from('OpusHead', 'latin1');
// A granule position of -1 marks a page on which no packet ends (RFC 7845 §4).
const NO_GRANULE = -1n;

/**
 * Packets decoded between two turns of the event loop: about a second of speech, some 3 ms of CPU (`npm run
 * bench:voice-message`), so the voice packets other servers send every 20 ms keep their time while a long clip
 * is read.
 */
const PACKETS_PER_TURN = 50;

/** The number of waveform points for audio of `durationSecs`: one per 100 ms, 1 to 256. */
export function waveformPoints(durationSecs: number): number {
  return Math.min(MAX_WAVEFORM_POINTS, Math.max(1, Math.ceil((durationSecs * 1000) / WAVEFORM_POINT_MS)));
}

/**
 * Reads an Ogg Opus file (the TTS service's body, as it is): its length, and its waveform from the decoded audio.
 * Decodes a second of audio per turn of the event loop.
 * @throws AudioFormatError when the bytes are not a whole Ogg Opus stream (or a packet does not decode).
 */
export async function analyseOggOpus(bytes: Buffer): Promise<VoiceClipFacts> {
  const reader = createOggPacketReader();
  const packets = reader.push(bytes);
  reader.end();
  const head = packets[0];
  if (!head?.data.subarray(0, 8).equals(OPUS_HEAD) || head.data.length < 19) {
    throw new AudioFormatError('ERR_NOT_OPUS', 'The audio is not Ogg Opus, which a voice message needs.');
  }
  const channels = head.data.readUInt8(9);
  if (channels < 1 || channels > 2 || head.data.readUInt8(18) !== 0) {
    throw new AudioFormatError('ERR_UNSUPPORTED_OPUS', `Unsupported Opus layout: ${channels} channels.`);
  }
  const preSkip = head.data.readUInt16LE(10);
  // The second packet is OpusTags; audio packets follow, in the head's logical stream only.
  const audio = packets.slice(2).filter((packet) => packet.serial === head.serial);
  const decoder = new opus.OpusEncoder(RATE, channels);
  const mono: Int16Array[] = [];
  let decoded = 0;
  for (const [index, packet] of audio.entries()) {
    if (index > 0 && index % PACKETS_PER_TURN === 0) await nextTurn();
    let pcm: Buffer;
    try {
      pcm = decoder.decode(packet.data);
    } catch (error) {
      throw new AudioFormatError('ERR_OPUS_CODEC', `An Opus packet did not decode: ${String(error)}`);
    }
    const frames = pcm.length / 2 / channels;
    const out = new Int16Array(frames);
    for (let i = 0; i < frames; i++) {
      let sum = 0;
      for (let c = 0; c < channels; c++) sum += pcm.readInt16LE((i * channels + c) * 2);
      out[i] = Math.round(sum / channels);
    }
    mono.push(out);
    decoded += frames;
  }
  const granule = lastGranule(bytes, head.serial);
  // The last granule is the end of the audio, trimming the encoder's padding; without one, what decoded.
  const samples = Math.max(
    0,
    granule === undefined ? decoded - preSkip : Math.min(Number(granule), decoded) - preSkip,
  );
  const durationSecs = Math.round((samples / RATE) * 1000) / 1000;
  return { durationSecs, waveform: waveformOf(mono, preSkip, samples, waveformPoints(durationSecs)) };
}

/**
 * One byte per point: the RMS level of its span of samples, scaled so that a full-scale sine is 255. Silence is 0
 * throughout.
 */
function waveformOf(chunks: readonly Int16Array[], skip: number, samples: number, points: number): string {
  const sums = new Float64Array(points);
  const counts = new Uint32Array(points);
  let index = -skip;
  for (const chunk of chunks) {
    for (const value of chunk) {
      if (index >= 0 && index < samples) {
        const point = Math.min(points - 1, Math.floor((index * points) / samples));
        sums[point] = (sums[point] ?? 0) + value * value;
        counts[point] = (counts[point] ?? 0) + 1;
      }
      index++;
    }
  }
  const bytes = Buffer.alloc(points);
  for (let i = 0; i < points; i++) {
    const count = counts[i] ?? 0;
    const rms = count === 0 ? 0 : Math.sqrt((sums[i] ?? 0) / count);
    bytes[i] = Math.min(255, Math.round(((rms * Math.SQRT2) / 32_768) * 255));
  }
  return bytes.toString('base64');
}

/** The granule position of the last page of logical stream `serial` that has one (RFC 3533 §6: offset 6). */
function lastGranule(bytes: Buffer, serial: number): bigint | undefined {
  let found: bigint | undefined;
  let at = 0;
  // The reader above verified every page, so the header layout can be walked without checks beyond bounds.
  while (at + 27 <= bytes.length) {
    const segments = bytes.readUInt8(at + 26);
    let body = 0;
    for (let i = 0; i < segments; i++) body += bytes.readUInt8(at + 27 + i);
    const granule = bytes.readBigInt64LE(at + 6);
    if (bytes.readUInt32LE(at + 14) === serial && granule !== NO_GRANULE) found = granule;
    at += 27 + segments + body;
  }
  return found;
}
