import { createHash } from 'node:crypto';
import type { AudioFormat } from '../tts/index.ts';

/**
 * One cache file: `HERALDAC` (8 bytes), the header's length (u32, big-endian), the header as JSON, then the audio.
 * The header carries the audio's length and SHA-256, so a truncated or altered file is recognised before a single
 * byte of it is played.
 */

/** What a cache file says about its audio. */
export interface EntryMeta {
  readonly format: AudioFormat;
  readonly contentType: string;
  readonly sampleRate: number | undefined;
  readonly durationS: number | undefined;
  /** Characters the service billed for it. */
  readonly characters: number;
  /** What the service charged for it (`X-Cost-USD`), the saving of every later hit; undefined when unknown. */
  readonly costUsd: number | undefined;
  /** Ms since the epoch. */
  readonly createdAt: number;
}

/** A decoded, verified cache file. */
export interface Entry {
  readonly meta: EntryMeta;
  readonly audio: Buffer;
}

const MAGIC = Buffer.from('HERALDAC', 'latin1');
const VERSION = 1;
/** A header is a few hundred bytes; anything claiming more is damage, not a header. */
const MAX_HEADER_BYTES = 16 * 1024;

interface Header extends EntryMeta {
  readonly v: number;
  readonly bytes: number;
  readonly sha256: string;
}

/** The bytes of a cache file holding `audio`. */
export function encodeEntry(meta: EntryMeta, audio: Buffer): Buffer {
  return Buffer.concat([encodeEntryHead(meta, audio), audio]);
}

/** The bytes of a cache file before its audio: written with the audio behind them, no copy of it is made. */
export function encodeEntryHead(meta: EntryMeta, audio: Buffer): Buffer {
  const header: Header = {
    v: VERSION,
    bytes: audio.length,
    sha256: createHash('sha256').update(audio).digest('hex'),
    ...meta,
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  return Buffer.concat([MAGIC, length, json]);
}

/** Decodes and verifies a cache file; undefined when it is truncated, altered or not a cache file at all. */
export function decodeEntry(file: Buffer): Entry | undefined {
  if (file.length < MAGIC.length + 4 || !file.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const headerBytes = file.readUInt32BE(MAGIC.length);
  const start = MAGIC.length + 4;
  if (headerBytes > MAX_HEADER_BYTES || start + headerBytes > file.length) return undefined;
  let header: Partial<Header>;
  try {
    header = JSON.parse(file.subarray(start, start + headerBytes).toString('utf8')) as Partial<Header>;
  } catch {
    return undefined;
  }
  const audio = file.subarray(start + headerBytes);
  if (
    header.v !== VERSION ||
    header.bytes !== audio.length ||
    (header.format !== 'opus' && header.format !== 'wav') ||
    typeof header.sha256 !== 'string' ||
    createHash('sha256').update(audio).digest('hex') !== header.sha256
  ) {
    return undefined;
  }
  return {
    audio,
    meta: {
      format: header.format,
      contentType: typeof header.contentType === 'string' ? header.contentType : '',
      sampleRate: typeof header.sampleRate === 'number' ? header.sampleRate : undefined,
      durationS: typeof header.durationS === 'number' ? header.durationS : undefined,
      characters: typeof header.characters === 'number' ? header.characters : 0,
      costUsd: typeof header.costUsd === 'number' ? header.costUsd : undefined,
      createdAt: typeof header.createdAt === 'number' ? header.createdAt : 0,
    },
  };
}
