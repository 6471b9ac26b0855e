/**
 * The audio a generation streams: its length for a text, and its bytes (Ogg Opus pages or WAV) cut into chunks
 * stamped with the audio time at which each becomes due.
 */
import { OPUS_RATE, toneSamples, writeOggOpus } from './ogg.ts';
import { pcmBytes, wavHeader } from './wav.ts';

/** How the emulator shapes its audio, to exercise demuxer and player edge cases. */
export interface AudioQuirks {
  /** Opus packet duration; Discord needs 20, real services may send 60. */
  frameMs: 20 | 40 | 60;
  /** Split Opus packets across Ogg pages (lacing 255 + continued flag), which prism-media cannot demux. */
  continuedPackets: boolean;
  /** Channels of the Opus stream or WAV. */
  channels: 1 | 2;
}

/** Sample rate reported in X-Sample-Rate and used for WAV output. */
export const OUTPUT_SAMPLE_RATE = 24_000;

const WAV_CHUNK_MS = 100;

/** Audio length in ms the emulator produces for `text` (code points × msPerChar, capped). */
export function expectedDurationMs(
  text: string,
  options: { msPerChar?: number; maxAudioMs?: number } = {},
): number {
  return Math.min([...text].length * (options.msPerChar ?? 40), options.maxAudioMs ?? 20_000);
}

/** One piece of a response body and when it is due. */
export interface TimedChunk {
  /** Audio time in ms at which this chunk starts (it is written at atMs / speed). */
  atMs: number;
  data: Buffer;
}

/** Ogg pages of `packets`, each due once the audio before it has played. */
export function oggChunks(packets: Buffer[], durationMs: number, audio: AudioQuirks): TimedChunk[] {
  const frameSamples = (OPUS_RATE / 1000) * audio.frameMs;
  const pages = writeOggOpus({
    packets,
    channels: audio.channels,
    frameSamples,
    continuedPackets: audio.continuedPackets,
    sampleCount: Math.round((durationMs * OPUS_RATE) / 1000),
  });
  // A page becomes due when the audio before it has "played": the last known granule before it.
  let granule = 0n;
  return pages.map((data) => {
    const chunk = { atMs: Number(granule) / (OPUS_RATE / 1000), data };
    const pageGranule = data.readBigInt64LE(6);
    if (pageGranule > 0n) granule = pageGranule;
    return chunk;
  });
}

/** A WAV header, then the PCM of a tone in 100 ms chunks. */
export function wavChunks(hz: number, durationMs: number, channels: 1 | 2): TimedChunk[] {
  const samples = toneSamples({ hz, durationMs, sampleRate: OUTPUT_SAMPLE_RATE, channels });
  const bytes = pcmBytes(samples);
  const chunks: TimedChunk[] = [
    { atMs: 0, data: wavHeader({ sampleRate: OUTPUT_SAMPLE_RATE, channels, dataBytes: bytes.length }) },
  ];
  const chunkBytes = ((OUTPUT_SAMPLE_RATE * WAV_CHUNK_MS) / 1000) * channels * 2;
  for (let at = 0, i = 0; at < bytes.length; at += chunkBytes, i++) {
    chunks.push({ atMs: i * WAV_CHUNK_MS, data: bytes.subarray(at, at + chunkBytes) });
  }
  return chunks;
}
