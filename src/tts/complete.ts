import { pipeline, type Readable, Transform } from 'node:stream';
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
 * The audio of a successful generation, passed through unchanged, but ending in an `ERR_TRUNCATED`
 * {@link AudioFormatError} (the error a body cut mid-page gives) when the body ended cleanly yet the clip is not
 * whole: no bytes at all; an Ogg stream whose last page lacks the end-of-stream flag; or less audio than
 * `durationS` announced (beyond {@link DURATION_TOLERANCE_S}). So a clip cut short is told to the member and never
 * cached. A body that is not recognisably Ogg or WAV is passed on unjudged: its decoder reports it.
 */
export function checkComplete(
  source: Readable,
  expect: { readonly format: AudioFormat; readonly durationS: number | undefined },
): Readable {
  const judge = expect.format === 'opus' ? oggJudge(expect.durationS) : wavJudge(expect.durationS);
  let bytes = 0;
  const checked = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      judge.write(chunk);
      callback(null, chunk);
    },
    flush(callback) {
      const missing = bytes === 0 ? 'the body was empty' : judge.end(bytes);
      callback(
        missing === undefined
          ? null
          : new AudioFormatError('ERR_TRUNCATED', `The speech service ended its audio early: ${missing}.`),
      );
    },
  });
  // Either side's end ends the other: a reader that gives up frees the socket; a reset reaches the reader.
  return pipeline(source, checked, () => {});
}

function shortBy(decodedS: number, durationS: number | undefined): string | undefined {
  if (durationS === undefined || decodedS >= durationS - DURATION_TOLERANCE_S) return undefined;
  return `${decodedS.toFixed(2)} s of the ${durationS} s announced`;
}

/** Follows Ogg page headers, skipping bodies, keeping the last page's flags and granule and OpusHead's pre-skip. */
function oggJudge(durationS: number | undefined): Judge {
  let pending: Buffer = Buffer.alloc(0);
  let skip = 0;
  let pages = 0;
  let unknown = false;
  let preSkip = 0;
  let lastFlags = 0;
  let lastGranule = -1n;
  let headBody: number | undefined;
  return {
    write(chunk) {
      if (unknown) return;
      let data: Buffer = chunk;
      for (;;) {
        if (skip > 0) {
          const taken = Math.min(skip, data.length);
          skip -= taken;
          data = data.subarray(taken);
          if (skip > 0) return;
        }
        pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
        data = Buffer.alloc(0);
        if (headBody !== undefined) {
          // The first page's body is OpusHead: its pre-skip is what the last granule counts beyond the audio.
          if (pending.length < headBody) return;
          if (pending.subarray(0, 8).toString('latin1') === 'OpusHead' && headBody >= 12)
            preSkip = pending.readUInt16LE(10);
          pending = pending.subarray(headBody);
          headBody = undefined;
          continue;
        }
        if (pending.length < OGG_HEADER_BYTES) return;
        if (pending.subarray(0, 4).toString('latin1') !== 'OggS') {
          unknown = true;
          return;
        }
        const segments = pending.readUInt8(26);
        if (pending.length < OGG_HEADER_BYTES + segments) return;
        let body = 0;
        for (let i = 0; i < segments; i++) body += pending.readUInt8(OGG_HEADER_BYTES + i);
        lastFlags = pending.readUInt8(5);
        const granule = pending.readBigInt64LE(6);
        if (granule >= 0n) lastGranule = granule;
        const rest = pending.subarray(OGG_HEADER_BYTES + segments);
        pending = Buffer.alloc(0);
        if (pages++ === 0) headBody = body;
        else skip = body;
        data = rest;
      }
    },
    end() {
      if (unknown || pages === 0) return unknown ? undefined : 'no whole Ogg page arrived';
      if (skip > 0 || pending.length > 0 || headBody !== undefined) return 'its last Ogg page was cut';
      if ((lastFlags & FLAG_EOS) === 0) return 'its last Ogg page does not end the stream';
      const decoded = lastGranule < 0n ? 0 : Math.max(0, Number(lastGranule) - preSkip) / OPUS_RATE;
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
