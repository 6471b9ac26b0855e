import { AudioFormatError } from '../audio/errors.ts';
import type { AudioFormat } from './types.ts';

/**
 * How far the decoded duration may fall short of `X-Audio-Duration` and still count as whole: two 60 ms Opus
 * frames (a service rounds the header, and trims the last frame's padding by granule position).
 */
export const DURATION_TOLERANCE_S = 0.12;

const OPUS_RATE = 48_000;
const OGG_HEADER_BYTES = 27;
const FLAG_EOS = 0x04;
/** A WAV header with every chunk before `data` is far smaller; past this the body is not a WAV we can judge. */
const MAX_WAV_HEADER_BYTES = 4096;
/** A WAV `data` size meaning "unknown" (a streamed WAV written before its length was known). */
const UNKNOWN_SIZES = new Set([0, 0xffffffff]);

/** What the end of a body shows, once it ended cleanly. */
interface Judge {
  write(chunk: Buffer): void;
  /** Undefined when whole; else what is missing, for the error message. */
  end(bytes: number): string | undefined;
}

/**
 * Judges, as the body of a successful generation arrives, whether it is a whole clip once it ended cleanly. It is
 * not when: no bytes came at all; an Ogg stream's last page lacks the end-of-stream flag; or less audio than
 * `durationS` announced came (beyond {@link DURATION_TOLERANCE_S}). Such a body ends in an `ERR_TRUNCATED`
 * {@link AudioFormatError} (the error a body cut mid-page gives), so a clip cut short is told to the member and
 * never cached. A body that is not recognisably Ogg or WAV is left unjudged: its decoder reports it.
 */
export interface CompletenessJudge {
  /** Every chunk of the body, in order. */
  write(chunk: Buffer): void;
  /** At the body's clean end: undefined when whole, else the `ERR_TRUNCATED` error to end the audio in. */
  end(): AudioFormatError | undefined;
}

/** A {@link CompletenessJudge} for a body announced as `format`, `durationS` long (when announced). */
export function judgeCompleteness(expect: {
  readonly format: AudioFormat;
  readonly durationS: number | undefined;
}): CompletenessJudge {
  const judge = expect.format === 'opus' ? oggJudge(expect.durationS) : wavJudge(expect.durationS);
  let bytes = 0;
  return {
    write(chunk) {
      bytes += chunk.length;
      judge.write(chunk);
    },
    end() {
      const missing = bytes === 0 ? 'the body was empty' : judge.end(bytes);
      return missing === undefined
        ? undefined
        : new AudioFormatError('ERR_TRUNCATED', `The speech service ended its audio early: ${missing}.`);
    },
  };
}

function shortBy(decodedS: number, durationS: number | undefined): string | undefined {
  if (durationS === undefined || decodedS >= durationS - DURATION_TOLERANCE_S) return undefined;
  return `${decodedS.toFixed(2)} s of the ${durationS} s announced`;
}

/** The most bytes an Ogg page header holds: 27 fixed, then up to 255 lacing values. */
const MAX_OGG_HEADER_BYTES = OGG_HEADER_BYTES + 255;
/** OpusHead's bytes up to and including its pre-skip (magic 8, version 1, channels 1, pre-skip 2). */
const OPUS_HEAD_BYTES = 12;

/**
 * Follows Ogg page headers, skipping bodies, keeping the last page's flags and granule and OpusHead's pre-skip.
 * Copies header bytes only (into buffers of its own, allocated once): every page of every clip passes here as it
 * arrives, 1,000 clips at once in a rush. `Buffer.alloc`, not `allocUnsafe`: a small buffer of Node's shared pool
 * would keep its whole slab (64 KiB on Node 24) alive as long as the judge.
 */
function oggJudge(durationS: number | undefined): Judge {
  const header = Buffer.alloc(MAX_OGG_HEADER_BYTES);
  const head = Buffer.alloc(OPUS_HEAD_BYTES);
  /** Header bytes held of the page being read; its body is next once it reaches `headerBytes`. */
  let held = 0;
  let headerBytes = OGG_HEADER_BYTES;
  /** Body bytes of the current page still to come; `headLeft` of them are OpusHead's, copied. */
  let skip = 0;
  let headLeft = 0;
  let headHeld = 0;
  let pages = 0;
  let unknown = false;
  let lastFlags = 0;
  /** The last page's granule position that was not -1 (as two 32-bit halves: no BigInt per page). */
  let granuleLow = -1;
  let granuleHigh = -1;
  return {
    write(chunk) {
      let at = 0;
      while (at < chunk.length && !unknown) {
        if (skip > 0) {
          const taken = Math.min(skip, chunk.length - at);
          if (headLeft > 0) {
            const copied = Math.min(headLeft, taken);
            chunk.copy(head, headHeld, at, at + copied);
            headHeld += copied;
            headLeft -= copied;
          }
          skip -= taken;
          at += taken;
          continue;
        }
        const copied = Math.min(headerBytes - held, chunk.length - at);
        chunk.copy(header, held, at, at + copied);
        held += copied;
        at += copied;
        if (held < headerBytes) return;
        if (headerBytes === OGG_HEADER_BYTES) {
          // "OggS"
          if (header[0] !== 0x4f || header[1] !== 0x67 || header[2] !== 0x67 || header[3] !== 0x53) {
            unknown = true;
            return;
          }
          headerBytes += header.readUInt8(26);
          if (held < headerBytes) continue;
        }
        let body = 0;
        for (let i = OGG_HEADER_BYTES; i < headerBytes; i++) body += header.readUInt8(i);
        lastFlags = header.readUInt8(5);
        const low = header.readUInt32LE(6);
        const high = header.readUInt32LE(10);
        if (high < 0x80000000) {
          granuleLow = low;
          granuleHigh = high;
        }
        if (pages++ === 0) headLeft = Math.min(OPUS_HEAD_BYTES, body);
        skip = body;
        held = 0;
        headerBytes = OGG_HEADER_BYTES;
      }
    },
    end() {
      if (unknown) return undefined;
      if (pages === 0) return 'no whole Ogg page arrived';
      if (skip > 0 || held > 0) return 'its last Ogg page was cut';
      if ((lastFlags & FLAG_EOS) === 0) return 'its last Ogg page does not end the stream';
      const preSkip =
        headHeld >= OPUS_HEAD_BYTES && head.toString('latin1', 0, 8) === 'OpusHead'
          ? head.readUInt16LE(10)
          : 0;
      const granule = granuleHigh < 0 ? -1 : granuleHigh * 2 ** 32 + granuleLow;
      const decoded = granule < 0 ? 0 : Math.max(0, granule - preSkip) / OPUS_RATE;
      return shortBy(decoded, durationS);
    },
  };
}

/** Reads the WAV header up to `data`, then counts the PCM bytes against the declared size and the duration. */
function wavJudge(durationS: number | undefined): Judge {
  let head: Buffer = Buffer.alloc(0);
  let parsed: { dataStart: number; declared: number; bytesPerSecond: number } | undefined;
  let unknown = false;
  const parse = (): void => {
    if (head.length < 12) return;
    if (
      head.subarray(0, 4).toString('latin1') !== 'RIFF' ||
      head.subarray(8, 12).toString('latin1') !== 'WAVE'
    ) {
      unknown = true;
      return;
    }
    let bytesPerSecond = 0;
    for (let at = 12; at + 8 <= head.length; ) {
      const id = head.subarray(at, at + 4).toString('latin1');
      const size = head.readUInt32LE(at + 4);
      if (id === 'data') {
        parsed = { dataStart: at + 8, declared: size, bytesPerSecond };
        return;
      }
      if (id === 'fmt ' && at + 16 <= head.length) bytesPerSecond = head.readUInt32LE(at + 16);
      at += 8 + size + (size % 2);
    }
    if (head.length > MAX_WAV_HEADER_BYTES) unknown = true;
  };
  return {
    write(chunk) {
      if (parsed || unknown) return;
      head = Buffer.concat([head, chunk]);
      parse();
    },
    end(bytes) {
      if (unknown) return undefined;
      if (!parsed) return 'the WAV header never reached its data';
      const data = bytes - parsed.dataStart;
      if (!UNKNOWN_SIZES.has(parsed.declared) && data < parsed.declared)
        return `${data} of the ${parsed.declared} PCM bytes the WAV header announced`;
      return parsed.bytesPerSecond > 0 ? shortBy(data / parsed.bytesPerSecond, durationS) : undefined;
    },
  };
}
