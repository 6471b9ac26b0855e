/**
 * What was heard: decode Opus, measure sounding segments and their pitch, parse WAV. Tests state audio facts
 * ("a 1.2 s tone at 440 Hz, then a 660 Hz one") through these instead of comparing bytes.
 */
import opus from '@discordjs/opus';

const { OpusEncoder } = opus;

/** Opus packets → mono 48 kHz PCM (stereo is mixed down), with @discordjs/opus. */
export function decodeOpus(packets: readonly Buffer[], channels: 1 | 2 = 1): Int16Array {
  const decoder = new OpusEncoder(48_000, channels);
  const chunks: Int16Array[] = [];
  let total = 0;
  for (const packet of packets) {
    const pcm = decoder.decode(packet);
    const frames = pcm.length / 2 / channels;
    const mono = new Int16Array(frames);
    for (let i = 0; i < frames; i++) {
      let sum = 0;
      for (let c = 0; c < channels; c++) sum += pcm.readInt16LE((i * channels + c) * 2);
      mono[i] = Math.round(sum / channels);
    }
    chunks.push(mono);
    total += frames;
  }
  const out = new Int16Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

// Frame durations in ms by TOC config number (RFC 6716 §3.1, Table 2): SILK 0–11, Hybrid 12–15, CELT 16–31.
const SILK_MS = [10, 20, 40, 60];
const HYBRID_MS = [10, 20];
const CELT_MS = [2.5, 5, 10, 20];

/**
 * Opus frame duration in ms of one packet from its TOC byte (RFC 6716 §3.1), × frame count.
 * @throws Error on an empty packet or a code-3 packet without its frame-count byte.
 */
export function packetDurationMs(packet: Buffer): number {
  const toc = packet[0];
  if (toc === undefined) throw new Error('empty Opus packet');
  const config = toc >> 3;
  const frameMs =
    (config < 12 ? SILK_MS[config % 4] : config < 16 ? HYBRID_MS[config % 2] : CELT_MS[config % 4]) ?? 0;
  const code = toc & 0x03;
  if (code === 0) return frameMs;
  if (code === 1 || code === 2) return frameMs * 2;
  const countByte = packet[1];
  if (countByte === undefined) throw new Error('code 3 Opus packet without a frame count byte');
  return frameMs * (countByte & 0x3f);
}

/**
 * The frames of an Opus packet, each as a packet of its own (code 0, the same configuration): what a receiver's
 * decoder plays one after the other. A packet of one frame comes back as it is; one it cannot read (truncated,
 * malformed) too, whole.
 */
export function splitOpusFrames(packet: Buffer): Buffer[] {
  const toc = packet[0];
  if (toc === undefined || (toc & 0x03) === 0) return [packet];
  const code = toc & 0x03;
  const single = (frame: Buffer): Buffer => Buffer.concat([Buffer.from([toc & 0xfc]), frame]);
  const body = packet.subarray(1);
  const size = (at: number): { length: number; bytes: number } | undefined => {
    const first = body[at];
    if (first === undefined) return undefined;
    if (first < 252) return { length: first, bytes: 1 };
    const second = body[at + 1];
    return second === undefined ? undefined : { length: second * 4 + first, bytes: 2 };
  };
  if (code === 1) {
    if (body.length % 2 !== 0) return [packet];
    const half = body.length / 2;
    return [single(body.subarray(0, half)), single(body.subarray(half))];
  }
  if (code === 2) {
    const first = size(0);
    if (!first || first.bytes + first.length > body.length) return [packet];
    const rest = body.subarray(first.bytes);
    return [single(rest.subarray(0, first.length)), single(rest.subarray(first.length))];
  }
  const countByte = body[0];
  if (countByte === undefined) return [packet];
  const count = countByte & 0x3f;
  const vbr = (countByte & 0x80) !== 0;
  let at = 1;
  let padding = 0;
  if ((countByte & 0x40) !== 0) {
    for (;;) {
      const byte = body[at++];
      if (byte === undefined) return [packet];
      padding += byte === 255 ? 254 : byte;
      if (byte !== 255) break;
    }
  }
  const lengths: number[] = [];
  if (vbr) {
    for (let i = 0; i < count - 1; i++) {
      const next = size(at);
      if (!next) return [packet];
      lengths.push(next.length);
      at += next.bytes;
    }
    lengths.push(body.length - padding - at - lengths.reduce((sum, length) => sum + length, 0));
  } else {
    const data = body.length - padding - at;
    if (count === 0 || data % count !== 0) return [packet];
    for (let i = 0; i < count; i++) lengths.push(data / count);
  }
  if (lengths.some((length) => length < 0)) return [packet];
  const frames: Buffer[] = [];
  for (const length of lengths) {
    frames.push(single(body.subarray(at, at + length)));
    at += length;
  }
  return frames;
}

/** One stretch of sound between silences, as measured by {@link analyse}. */
export interface Segment {
  startMs: number;
  endMs: number;
  durationMs: number;
  /** Estimated fundamental frequency in Hz (upward zero crossings with hysteresis); 0 if too short to tell. */
  dominantHz: number;
}

/** Result of {@link analyse}. */
export interface Analysis {
  /** Length of the whole PCM buffer in ms. */
  durationMs: number;
  /** Sum of the segments' durations. */
  soundMs: number;
  segments: Segment[];
  /** Silences between consecutive segments, in ms. */
  gapsMs: number[];
}

/** Options of {@link analyse}. */
export interface AnalyseOptions {
  /** Samples per second of `pcm`; default 48000. */
  sampleRate?: number;
  /** Shortest silence that separates two segments; default 30 ms. */
  minGapMs?: number;
  /** Absolute sample level above which a sample counts as sound; default 600 (about -35 dBFS). */
  threshold?: number;
}

/** Splits PCM into sounding segments separated by >= minGapMs of silence; reports each one's length and pitch. */
export function analyse(pcm: Int16Array, o: AnalyseOptions = {}): Analysis {
  const rate = o.sampleRate ?? 48_000;
  const minGap = Math.max(1, Math.round(((o.minGapMs ?? 30) * rate) / 1000));
  const threshold = o.threshold ?? 600;
  const ranges: { start: number; end: number }[] = [];
  let current: { start: number; end: number } | null = null;
  for (let i = 0; i < pcm.length; i++) {
    if (Math.abs(pcm[i] ?? 0) <= threshold) continue;
    if (current !== null && i - current.end < minGap) {
      current.end = i + 1;
    } else {
      current = { start: i, end: i + 1 };
      ranges.push(current);
    }
  }
  const toMs = (samples: number): number => (samples * 1000) / rate;
  const segments = ranges.map(({ start, end }) => ({
    startMs: toMs(start),
    endMs: toMs(end),
    durationMs: toMs(end - start),
    dominantHz: estimatePitch(pcm.subarray(start, end), rate),
  }));
  const gapsMs = segments.slice(1).map((s, i) => s.startMs - (segments[i]?.endMs ?? s.startMs));
  return {
    durationMs: toMs(pcm.length),
    soundMs: segments.reduce((sum, s) => sum + s.durationMs, 0),
    segments,
    gapsMs,
  };
}

/** Frequency from the mean period between upward zero crossings, interpolated to sub-sample accuracy. */
function estimatePitch(pcm: Int16Array, rate: number): number {
  let peak = 0;
  for (const v of pcm) peak = Math.max(peak, Math.abs(v));
  // Hysteresis at a tenth of the peak keeps codec noise near zero from counting as crossings.
  const hysteresis = peak / 10;
  let armed = false;
  let first = -1;
  let last = -1;
  let crossings = 0;
  for (let i = 1; i < pcm.length; i++) {
    const previous = pcm[i - 1] ?? 0;
    const value = pcm[i] ?? 0;
    if (value < -hysteresis) armed = true;
    if (armed && previous < 0 && value >= 0) {
      const at = i - 1 + -previous / (value - previous);
      if (first < 0) first = at;
      last = at;
      crossings++;
      armed = false;
    }
  }
  if (crossings < 2 || last <= first) return 0;
  return ((crossings - 1) * rate) / (last - first);
}

/** Decoded contents of a PCM WAV file. */
export interface WavContents {
  sampleRate: number;
  channels: number;
  /** Interleaved s16 samples. */
  samples: Int16Array;
}

/**
 * Parses a RIFF/WAVE file with 16-bit PCM data; tolerates extra chunks and a data size of 0 or 0xFFFFFFFF
 * (streamed WAVs), reading to the end of the buffer then.
 * @throws Error when it is not RIFF/WAVE, not PCM s16, or lacks fmt/data chunks.
 */
export function parseWav(data: Buffer): WavContents {
  if (
    data.length < 12 ||
    data.toString('latin1', 0, 4) !== 'RIFF' ||
    data.toString('latin1', 8, 12) !== 'WAVE'
  ) {
    throw new Error('not a RIFF/WAVE file');
  }
  let format: { sampleRate: number; channels: number } | null = null;
  let offset = 12;
  while (offset + 8 <= data.length) {
    const id = data.toString('latin1', offset, offset + 4);
    const size = data.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      const audioFormat = data.readUInt16LE(body);
      const bits = data.readUInt16LE(body + 14);
      if (audioFormat !== 1 || bits !== 16)
        throw new Error(`unsupported WAV format ${audioFormat}/${bits} bit`);
      format = { channels: data.readUInt16LE(body + 2), sampleRate: data.readUInt32LE(body + 4) };
    } else if (id === 'data') {
      if (format === null) throw new Error('WAV data chunk before fmt chunk');
      const end = size === 0 || size === 0xffffffff ? data.length : Math.min(data.length, body + size);
      const bytes = data.subarray(body, end - ((end - body) % 2));
      const samples = new Int16Array(bytes.length / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2);
      return { ...format, samples };
    }
    offset = body + size + (size % 2);
  }
  throw new Error('WAV file without a data chunk');
}

/** Interleaved PCM → mono by averaging channels (for analysing a stereo WAV). */
export function toMono(samples: Int16Array, channels: number): Int16Array {
  if (channels === 1) return samples;
  const out = new Int16Array(Math.floor(samples.length / channels));
  for (let i = 0; i < out.length; i++) {
    let sum = 0;
    for (let c = 0; c < channels; c++) sum += samples[i * channels + c] ?? 0;
    out[i] = Math.round(sum / channels);
  }
  return out;
}
