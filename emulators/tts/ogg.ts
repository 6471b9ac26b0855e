/**
 * Ogg Opus writing for the TTS emulator: a sine tone encoded with libopus (via @discordjs/opus) and muxed into
 * Ogg pages per RFC 3533 (the container) and RFC 7845 (Opus in Ogg).
 */
import opus from '@discordjs/opus';

const { OpusEncoder } = opus;

/** Opus always runs at 48 kHz inside; the OpusHead "input sample rate" is informational only (RFC 7845 §5.1). */
export const OPUS_RATE = 48_000;

// libopus CTL request number (opus_defines.h); 0 switches the encoder to constant bitrate.
const OPUS_SET_VBR_REQUEST = 4006;

const FADE_MS = 5;

/** libopus' encoder delay at 48 kHz in samples (the usual OpusHead pre-skip). */
export const ENCODER_DELAY = 312;

/** Options of {@link toneSamples}. */
export interface ToneOptions {
  /** Frequency of the sine in Hz. */
  hz: number;
  /** Length of the tone in ms; the sample count is rounded to the nearest sample. */
  durationMs: number;
  /** Samples per second. */
  sampleRate: number;
  /** Interleaved channels, each carrying the same tone. */
  channels: 1 | 2;
  /** Peak level as a fraction of full scale; default 0.3. */
  amplitude?: number;
}

/** Interleaved s16 PCM of a sine tone with a ~5 ms linear fade in and out (no clicks). */
export function toneSamples(o: ToneOptions): Int16Array {
  const frames = Math.round((o.durationMs * o.sampleRate) / 1000);
  const out = new Int16Array(frames * o.channels);
  const peak = (o.amplitude ?? 0.3) * 32767;
  const fade = Math.max(1, Math.round((FADE_MS * o.sampleRate) / 1000));
  const step = (2 * Math.PI * o.hz) / o.sampleRate;
  for (let i = 0; i < frames; i++) {
    const envelope = Math.min(1, i / fade, (frames - 1 - i) / fade);
    const value = Math.round(peak * Math.max(0, envelope) * Math.sin(step * i));
    for (let c = 0; c < o.channels; c++) out[i * o.channels + c] = value;
  }
  return out;
}

/** Options of {@link encodeTone}. */
export interface EncodeToneOptions {
  /** Frequency of the sine in Hz. */
  hz: number;
  /** Length of the tone in ms; the last packet is padded with silence to a whole frame. */
  durationMs: number;
  /** Duration of each Opus packet. */
  frameMs: 20 | 40 | 60;
  /** Channels encoded (both carry the same tone when 2). */
  channels: 1 | 2;
  /** Peak level as a fraction of full scale; default 0.3. */
  amplitude?: number;
  /** Constant bitrate in bit/s; default libopus' own variable bitrate. High values make packets over 255 bytes. */
  bitrate?: number;
}

/** Encodes a sine tone with @discordjs/opus at 48 kHz into Opus packets of `frameMs` each. */
export function encodeTone(o: EncodeToneOptions): Buffer[] {
  const pcm = toneSamples({
    hz: o.hz,
    durationMs: o.durationMs,
    sampleRate: OPUS_RATE,
    channels: o.channels,
    ...(o.amplitude === undefined ? {} : { amplitude: o.amplitude }),
  });
  const encoder = new OpusEncoder(OPUS_RATE, o.channels);
  if (o.bitrate !== undefined) {
    encoder.setBitrate(o.bitrate);
    encoder.applyEncoderCTL(OPUS_SET_VBR_REQUEST, 0);
  }
  // libopus takes 2.5–60 ms per call; @discordjs/opus derives the frame size from the buffer length.
  const frameValues = (OPUS_RATE / 1000) * o.frameMs * o.channels;
  // Trailing silence flushes the encoder's lookahead so the tone's last milliseconds come out too.
  const totalValues = pcm.length + ENCODER_DELAY * o.channels;
  const packets: Buffer[] = [];
  for (let start = 0; start < totalValues; start += frameValues) {
    const frame = Buffer.alloc(frameValues * 2);
    const slice = pcm.subarray(start, start + frameValues);
    Buffer.from(slice.buffer, slice.byteOffset, slice.byteLength).copy(frame);
    packets.push(encoder.encode(frame));
  }
  return packets;
}

const CRC_TABLE = (() => {
  // Ogg's CRC-32: polynomial 0x04c11db7, not reflected, initial value 0, no final xor (RFC 3533 §6).
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let bit = 0; bit < 8; bit++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

/** Ogg page checksum of `page` (whose CRC field must be zero). */
export function oggCrc(page: Uint8Array): number {
  let crc = 0;
  for (const byte of page) crc = ((crc << 8) ^ (CRC_TABLE[((crc >>> 24) ^ byte) & 0xff] ?? 0)) >>> 0;
  return crc;
}

/** Header-type flags of an Ogg page (RFC 3533 §6). */
export const PAGE_FLAG = { continued: 0x01, bos: 0x02, eos: 0x04 } as const;

interface PageSpec {
  flags: number;
  granule: bigint;
  sequence: number;
  serial: number;
  lacing: number[];
  body: Buffer;
}

function buildPage(p: PageSpec): Buffer {
  const header = Buffer.alloc(27 + p.lacing.length);
  header.write('OggS', 0, 'latin1');
  header.writeUInt8(0, 4);
  header.writeUInt8(p.flags, 5);
  header.writeBigInt64LE(p.granule, 6);
  header.writeUInt32LE(p.serial >>> 0, 14);
  header.writeUInt32LE(p.sequence, 18);
  header.writeUInt32LE(0, 22);
  header.writeUInt8(p.lacing.length, 26);
  for (const [i, value] of p.lacing.entries()) header.writeUInt8(value, 27 + i);
  const page = Buffer.concat([header, p.body]);
  page.writeUInt32LE(oggCrc(page), 22);
  return page;
}

/** Lacing values of one packet: 255 for each full segment, then the remainder (0 when a multiple of 255). */
function lacingOf(length: number): number[] {
  const values = new Array<number>(Math.floor(length / 255)).fill(255);
  values.push(length % 255);
  return values;
}

/** OpusHead identification header (RFC 7845 §5.1), channel mapping family 0. */
export function opusHead(o: { channels: 1 | 2; preSkip: number; inputSampleRate: number }): Buffer {
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head.writeUInt8(1, 8);
  head.writeUInt8(o.channels, 9);
  head.writeUInt16LE(o.preSkip, 10);
  head.writeUInt32LE(o.inputSampleRate, 12);
  head.writeInt16LE(0, 16);
  head.writeUInt8(0, 18);
  return head;
}

/** OpusTags comment header (RFC 7845 §5.2) with a vendor string and no comments. */
export function opusTags(vendor = 'herald-tts-emulator'): Buffer {
  const vendorBytes = Buffer.from(vendor, 'utf8');
  const tags = Buffer.alloc(8 + 4 + vendorBytes.length + 4);
  tags.write('OpusTags', 0, 'latin1');
  tags.writeUInt32LE(vendorBytes.length, 8);
  vendorBytes.copy(tags, 12);
  tags.writeUInt32LE(0, 12 + vendorBytes.length);
  return tags;
}

/** Options of {@link writeOggOpus}. */
export interface WriteOggOpusOptions {
  /** Opus packets, in order. */
  packets: Buffer[];
  /** Channel count written in OpusHead; must match the packets. */
  channels: 1 | 2;
  /** Samples per packet at 48 kHz (960 for 20 ms). */
  frameSamples: number;
  /** OpusHead's informational input sample rate; default 24000. */
  inputSampleRate?: number;
  /** Decoder samples to discard at the start (OpusHead); default 312, libopus' encoder delay at 48 kHz. */
  preSkip?: number;
  /** Whole packets per audio page when `continuedPackets` is false; default 1. */
  packetsPerPage?: number;
  /** Cap page bodies at `maxBodyBytes`, splitting packets across pages with lacing 255 + continued flag. */
  continuedPackets?: boolean;
  /** Body cap per audio page when `continuedPackets` is true; default 600 (packets must exceed 255 bytes to split). */
  maxBodyBytes?: number;
  /** Bitstream serial number; default random. */
  serial?: number;
  /** Real samples at 48 kHz; when given the last granule is preSkip + sampleCount, trimming end padding (§4.4). */
  sampleCount?: number;
}

interface Segment {
  packet: number;
  value: number;
  offset: number;
  last: boolean;
}

/** Muxes Opus packets into Ogg pages: OpusHead page (BOS), OpusTags page, audio pages with granule positions and CRC, last page EOS. */
export function writeOggOpus(o: WriteOggOpusOptions): Buffer[] {
  const serial = o.serial ?? Math.floor(Math.random() * 0x1_0000_0000);
  const preSkip = o.preSkip ?? ENCODER_DELAY;
  const pages: Buffer[] = [];
  let sequence = 0;
  const push = (flags: number, granule: bigint, lacing: number[], body: Buffer): void => {
    pages.push(buildPage({ flags, granule, sequence: sequence++, serial, lacing, body }));
  };
  const head = opusHead({ channels: o.channels, preSkip, inputSampleRate: o.inputSampleRate ?? 24_000 });
  push(PAGE_FLAG.bos, 0n, lacingOf(head.length), head);
  const tags = opusTags();
  push(0, 0n, lacingOf(tags.length), tags);

  const segments: Segment[] = [];
  for (const [packet, data] of o.packets.entries()) {
    const lacing = lacingOf(data.length);
    for (const [i, value] of lacing.entries()) {
      segments.push({ packet, value, offset: i * 255, last: i === lacing.length - 1 });
    }
  }
  const finalGranule =
    o.sampleCount === undefined
      ? undefined
      : BigInt(preSkip) + BigInt(Math.max(0, Math.round(o.sampleCount)));
  const maxBody = o.maxBodyBytes ?? 600;
  const perPage = Math.max(1, o.packetsPerPage ?? 1);

  let index = 0;
  let continued = false;
  while (index < segments.length) {
    const start = index;
    let body = 0;
    let completed = 0;
    while (index < segments.length && index - start < 255) {
      const segment = segments[index];
      if (segment === undefined) break;
      if (o.continuedPackets) {
        // Like libogg's size-triggered flush: the page ends where the cap falls, even mid-packet.
        if (index > start && body + segment.value > maxBody) break;
      } else if (completed === perPage) {
        break;
      } else if (
        segment.offset === 0 &&
        index > start &&
        index - start + lacingOf(o.packets[segment.packet]?.length ?? 0).length > 255
      ) {
        // A whole packet that would not fit in the 255-entry lacing table starts the next page.
        break;
      }
      body += segment.value;
      if (segment.last) completed++;
      index++;
    }
    const pageSegments = segments.slice(start, index);
    const lastDone = pageSegments.findLast((s) => s.last);
    // Granules count every decoded sample, pre-skip included; a page on which no packet ends carries -1 (§4).
    let granule = lastDone === undefined ? -1n : BigInt((lastDone.packet + 1) * o.frameSamples);
    const isLast = index >= segments.length;
    if (isLast && finalGranule !== undefined && finalGranule < granule) granule = finalGranule;
    const bodyBuffer = Buffer.concat(
      pageSegments.map((s) => {
        const packet = o.packets[s.packet] ?? Buffer.alloc(0);
        return packet.subarray(s.offset, s.offset + s.value);
      }),
    );
    const flags = (continued ? PAGE_FLAG.continued : 0) | (isLast ? PAGE_FLAG.eos : 0);
    push(
      flags,
      granule,
      pageSegments.map((s) => s.value),
      bodyBuffer,
    );
    continued = pageSegments.at(-1)?.last === false;
  }
  if (segments.length === 0) push(PAGE_FLAG.eos, finalGranule ?? 0n, [], Buffer.alloc(0));
  return pages;
}
