import { Transform } from 'node:stream';
import { type Logger, silentLogger } from '../log.ts';
import { AudioFormatError, describeBytes } from './errors.ts';
import { canResample, createResampler, type Resampler } from './resample.ts';

/** Options of {@link createWavToPcm}. */
export interface WavToPcmOptions {
  /** Where the WAV's format is logged at debug. */
  readonly logger?: Logger;
  /**
   * Told where its samples start in the input (the offset of the data chunk's first byte) and how many input bytes
   * make a millisecond of them: where in the input each 20 ms of the output came from.
   */
  readonly onData?: (dataStart: number, bytesPerMs: number) => void;
}

/** The format the WAV's fmt chunk declares. */
interface WavFormat {
  readonly channels: number;
  readonly sampleRate: number;
}

// @discordjs/voice's Raw input: 48 kHz stereo s16le, encoded by prism in 20 ms frames of 960 samples.
const OUTPUT_RATE = 48_000;
const FRAME_BYTES = 960 * 2 * 2;
const WAVE_FORMAT_PCM = 1;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;
// A data size a streaming writer puts when it does not know the length yet.
const UNKNOWN_SIZES = new Set([0, 0xffffffff]);

type Phase =
  | { readonly status: 'riff' }
  | { readonly status: 'chunk-header' }
  | { readonly status: 'chunk-body'; readonly id: string; readonly size: number }
  | { readonly status: 'skip'; remaining: number }
  | { readonly status: 'data'; remaining: number };

/** A Transform: WAV bytes in (streamed; the header may arrive split), 48 kHz stereo s16le PCM out (for
 * StreamType.Raw), resampled and up-mixed as needed and padded with silence to a whole 20 ms frame.
 * Accepts 16-bit PCM, mono or stereo; a data size of 0 or 0xFFFFFFFF means "until the end".
 * Errors are {@link AudioFormatError}s (`ERR_NOT_WAV`, `ERR_UNSUPPORTED_WAV`, `ERR_TRUNCATED`). */
export function createWavToPcm(options: WavToPcmOptions = {}): Transform {
  const logger = options.logger ?? silentLogger;
  let phase: Phase = { status: 'riff' };
  let held: Buffer = Buffer.alloc(0);
  let format: WavFormat | undefined;
  let resamplers: Resampler[] = [];
  let outputBytes = 0;
  // Input bytes received in all: the first byte held is at `received - held.length`.
  let received = 0;

  const convert = (samples: Int16Array[], stream: Transform): void => {
    const [left, right = left] = samples;
    if (left === undefined || right === undefined || left.length === 0) return;
    const out = Buffer.alloc(left.length * 4);
    for (let i = 0; i < left.length; i++) {
      out.writeInt16LE(left[i] ?? 0, i * 4);
      out.writeInt16LE(right[i] ?? 0, i * 4 + 2);
    }
    outputBytes += out.length;
    stream.push(out);
  };

  const onSamples = (bytes: Buffer, stream: Transform): void => {
    if (format === undefined) return;
    const channels = format.channels;
    const frames = bytes.length / (2 * channels);
    const split = Array.from({ length: channels }, () => new Int16Array(frames));
    for (let i = 0; i < frames; i++) {
      for (let c = 0; c < channels; c++) {
        const channel = split[c];
        if (channel !== undefined) channel[i] = bytes.readInt16LE((i * channels + c) * 2);
      }
    }
    convert(resamplers.length === 0 ? split : split.map((s, c) => resamplers[c]?.push(s) ?? s), stream);
  };

  const onFormat = (body: Buffer): void => {
    if (body.length < 16) throw unsupported(`its fmt chunk is ${body.length} bytes, too short`);
    let tag = body.readUInt16LE(0);
    // WAVE_FORMAT_EXTENSIBLE keeps the real format in the first two bytes of its sub-format GUID.
    if (tag === WAVE_FORMAT_EXTENSIBLE && body.length >= 26) tag = body.readUInt16LE(24);
    const channels = body.readUInt16LE(2);
    const sampleRate = body.readUInt32LE(4);
    const bits = body.readUInt16LE(14);
    if (tag !== WAVE_FORMAT_PCM) throw unsupported(`format tag ${tag} is not integer PCM (1)`);
    if (bits !== 16) throw unsupported(`${bits}-bit samples (16-bit only)`);
    if (channels < 1 || channels > 2) throw unsupported(`${channels} channels (mono or stereo only)`);
    if (sampleRate < 8000 || sampleRate > 192_000 || !canResample(sampleRate, OUTPUT_RATE)) {
      throw unsupported(`a sample rate of ${sampleRate} Hz`);
    }
    format = { channels, sampleRate };
    resamplers =
      sampleRate === OUTPUT_RATE
        ? []
        : Array.from({ length: channels }, () => createResampler(sampleRate, OUTPUT_RATE));
    logger.debug('wav format', { ...format });
  };

  // Advances through the header as far as the held bytes allow; returns false when it needs more.
  const step = (stream: Transform): boolean => {
    switch (phase.status) {
      case 'riff': {
        const prefix = held.subarray(0, 4);
        if (!prefix.equals(Buffer.from('RIFF').subarray(0, prefix.length))) {
          if (!prefix.equals(Buffer.from('RF64').subarray(0, prefix.length))) throw notWav(held);
        }
        if (held.length < 12) return false;
        if (held.toString('latin1', 8, 12) !== 'WAVE') throw notWav(held);
        held = held.subarray(12);
        phase = { status: 'chunk-header' };
        return true;
      }
      case 'chunk-header': {
        if (held.length < 8) return false;
        const id = held.toString('latin1', 0, 4);
        const size = held.readUInt32LE(4);
        held = held.subarray(8);
        if (id === 'data') {
          if (format === undefined) throw unsupported('its data chunk comes before its fmt chunk');
          phase = { status: 'data', remaining: UNKNOWN_SIZES.has(size) ? Number.POSITIVE_INFINITY : size };
          options.onData?.(received - held.length, (format.sampleRate * format.channels * 2) / 1000);
        } else if (id === 'fmt ') {
          phase = { status: 'chunk-body', id, size };
        } else {
          // RIFF chunks are padded to an even size.
          phase = { status: 'skip', remaining: size + (size % 2) };
        }
        return true;
      }
      case 'chunk-body': {
        if (held.length < phase.size) return false;
        onFormat(held.subarray(0, phase.size));
        held = held.subarray(phase.size + (phase.size % 2));
        phase = { status: 'chunk-header' };
        return true;
      }
      case 'skip': {
        const skipped = Math.min(phase.remaining, held.length);
        held = held.subarray(skipped);
        phase.remaining -= skipped;
        if (phase.remaining > 0) return false;
        phase = { status: 'chunk-header' };
        return true;
      }
      case 'data': {
        const block = 2 * (format?.channels ?? 1);
        const usable = Math.min(held.length, phase.remaining);
        const whole = usable - (usable % block);
        if (whole > 0) onSamples(held.subarray(0, whole), stream);
        held = held.subarray(whole);
        phase.remaining -= whole;
        // Anything after a sized data chunk (trailing chunks) is not audio.
        if (phase.remaining < block) held = Buffer.alloc(0);
        return false;
      }
    }
  };

  return new Transform({
    transform(chunk: Buffer | Uint8Array, _encoding, callback) {
      try {
        const bytes = Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
        held = held.length === 0 ? bytes : Buffer.concat([held, bytes]);
        received += bytes.length;
        while (step(this)) {
          // Each step consumed one header piece.
        }
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
    flush(callback) {
      if (phase.status !== 'data') {
        callback(new AudioFormatError('ERR_TRUNCATED', 'WAV ended before its data chunk'));
        return;
      }
      convert(
        resamplers.map((r) => r.flush()),
        this,
      );
      // prism's Opus encoder drops a partial last frame: pad with silence to a whole 20 ms.
      const short = (FRAME_BYTES - (outputBytes % FRAME_BYTES)) % FRAME_BYTES;
      if (short > 0) this.push(Buffer.alloc(short));
      logger.debug('wav done', { outputBytes: outputBytes + short });
      callback();
    },
  });
}

function notWav(bytes: Buffer): AudioFormatError {
  return new AudioFormatError(
    'ERR_NOT_WAV',
    `Not a WAV file: it starts with ${describeBytes(bytes.subarray(0, 12))}, not "RIFF....WAVE"`,
  );
}

function unsupported(reason: string): AudioFormatError {
  return new AudioFormatError('ERR_UNSUPPORTED_WAV', `Unsupported WAV: ${reason}`);
}
