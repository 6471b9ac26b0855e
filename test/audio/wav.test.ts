import { describe, expect, it } from 'vitest';
import { analyse } from '../../emulators/support/audio.ts';
import { toneSamples } from '../../emulators/tts/ogg.ts';
import { createResampler } from '../../src/audio/resample.ts';
import { createWavToPcm } from '../../src/audio/wav.ts';
import { captureLogger, chunked, runTransform } from './helpers.ts';
import { wavFile } from './wav-fixtures.ts';

// 20 ms of 48 kHz stereo s16le: the output is padded to whole frames of this.
const FRAME_BYTES = 3840;

async function toPcm(chunks: Buffer[]): Promise<Buffer> {
  return Buffer.concat(
    await runTransform<Buffer>(createWavToPcm({ logger: captureLogger().logger }), chunks),
  );
}

/** Splits 48 kHz stereo s16le into its two channels. */
function channels(pcm: Buffer): { left: Int16Array; right: Int16Array } {
  const frames = pcm.length / 4;
  const left = new Int16Array(frames);
  const right = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    left[i] = pcm.readInt16LE(i * 4);
    right[i] = pcm.readInt16LE(i * 4 + 2);
  }
  return { left, right };
}

const padded = (frames: number): number => Math.ceil((frames * 4) / FRAME_BYTES) * FRAME_BYTES;

describe('createWavToPcm', () => {
  it.each([
    [24_000, 1],
    [24_000, 2],
    [22_050, 1],
    [44_100, 2],
    [16_000, 1],
    [8_000, 1],
    [48_000, 1],
    [96_000, 1],
  ] as const)('%i Hz, %i channel(s) → 48 kHz stereo of the right length and pitch', async (rate, count) => {
    const hz = 440;
    const samples = toneSamples({ hz, durationMs: 700, sampleRate: rate, channels: count });
    const pcm = await toPcm(chunked(wavFile(samples, { sampleRate: rate, channels: count }), 4096));
    const inputFrames = samples.length / count;
    expect(pcm.length).toBe(padded(Math.ceil((inputFrames * 48_000) / rate)));
    const { left, right } = channels(pcm);
    expect(right).toEqual(left);
    const heard = analyse(left);
    expect(heard.segments).toHaveLength(1);
    expect(heard.segments[0]?.dominantHz).toBeGreaterThan(hz * 0.995);
    expect(heard.segments[0]?.dominantHz).toBeLessThan(hz * 1.005);
    expect(heard.soundMs).toBeGreaterThan(690);
    expect(heard.soundMs).toBeLessThan(710);
  });

  it('48 kHz stereo passes through sample-exact (then padded to 20 ms)', async () => {
    const samples = toneSamples({ hz: 1000, durationMs: 105, sampleRate: 48_000, channels: 2 });
    const pcm = await toPcm([wavFile(samples, { sampleRate: 48_000, channels: 2 })]);
    const bytes = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    expect(pcm.subarray(0, bytes.length)).toEqual(bytes);
    expect(pcm.length).toBe(padded(samples.length / 2));
    expect(pcm.subarray(bytes.length).every((b) => b === 0)).toBe(true);
  });

  it('keeps the level: a 24 kHz tone comes out with the same peak', async () => {
    const samples = toneSamples({
      hz: 440,
      durationMs: 300,
      sampleRate: 24_000,
      channels: 1,
      amplitude: 0.5,
    });
    const { left } = channels(await toPcm([wavFile(samples, { sampleRate: 24_000, channels: 1 })]));
    const peak = (a: Int16Array): number => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    expect(peak(left) / peak(samples)).toBeGreaterThan(0.98);
    expect(peak(left) / peak(samples)).toBeLessThan(1.02);
  });

  const samples = toneSamples({ hz: 440, durationMs: 200, sampleRate: 24_000, channels: 1 });
  const plain = wavFile(samples, { sampleRate: 24_000, channels: 1 });

  it.each([
    ['1-byte chunks (the header split everywhere)', chunked(plain, 1)],
    ['3-byte chunks', chunked(plain, 3)],
    ['the header and data split at byte 43', [plain.subarray(0, 43), plain.subarray(43)]],
  ])('gives the same PCM from %s', async (_name, chunks) => {
    expect(await toPcm(chunks)).toEqual(await toPcm([plain]));
  });

  it.each([
    ['a data size of 0 (streamed)', wavFile(samples, { sampleRate: 24_000, channels: 1, dataSize: 0 })],
    [
      'a data size of 0xFFFFFFFF (streamed)',
      wavFile(samples, { sampleRate: 24_000, channels: 1, dataSize: 0xffffffff }),
    ],
    [
      'LIST and odd-sized chunks before data',
      wavFile(samples, {
        sampleRate: 24_000,
        channels: 1,
        before: [
          { id: 'LIST', body: Buffer.from('INFOISFT\x05\x00\x00\x00tts!\x00', 'latin1') },
          { id: 'junk', body: Buffer.from([1, 2, 3]) },
        ],
      }),
    ],
    [
      'WAVE_FORMAT_EXTENSIBLE with PCM inside',
      wavFile(samples, { sampleRate: 24_000, channels: 1, formatTag: 0xfffe }),
    ],
    [
      'a trailing chunk after data',
      wavFile(samples, {
        sampleRate: 24_000,
        channels: 1,
        after: Buffer.from('LIST\x04\x00\x00\x00abcd', 'latin1'),
      }),
    ],
  ])('reads %s like a plain file', async (_name, file) => {
    expect(await toPcm(chunked(file, 7))).toEqual(await toPcm([plain]));
  });

  it.each([
    ['a plain header', { sampleRate: 24_000, channels: 1 }, 44, 48],
    ['stereo at 48 kHz', { sampleRate: 48_000, channels: 2 }, 44, 192],
    [
      'chunks before data',
      { sampleRate: 16_000, channels: 1, before: [{ id: 'junk', body: Buffer.from([1, 2, 3]) }] },
      56,
      32,
    ],
  ])(
    'says where the samples of %s start and how many bytes make a millisecond',
    async (_name, o, start, perMs) => {
      const told: [number, number][] = [];
      const file = wavFile(samples, o);
      await runTransform<Buffer>(
        createWavToPcm({ onData: (dataStart, bytesPerMs) => told.push([dataStart, bytesPerMs]) }),
        chunked(file, 5),
      );
      expect(told).toEqual([[start, perMs]]);
      // The data chunk's header ends where the samples start.
      expect(file.toString('latin1', start - 8, start - 4)).toBe('data');
    },
  );

  it.each([
    [
      'Ogg bytes',
      Buffer.from('OggS\x00\x02\x00\x00\x00\x00\x00\x00', 'latin1'),
      'ERR_NOT_WAV',
      /Not a WAV file.*OggS/,
    ],
    [
      'RIFF that is not WAVE',
      Buffer.from('RIFF\x04\x00\x00\x00AVI LIST', 'latin1'),
      'ERR_NOT_WAV',
      /Not a WAV/,
    ],
    [
      'IEEE float samples',
      wavFile(new Int16Array(4), { sampleRate: 24_000, channels: 1, formatTag: 3, bits: 32 }),
      'ERR_UNSUPPORTED_WAV',
      /format tag 3/,
    ],
    [
      '24-bit samples',
      wavFile(new Int16Array(6), { sampleRate: 24_000, channels: 1, bits: 24 }),
      'ERR_UNSUPPORTED_WAV',
      /24-bit/,
    ],
    [
      'six channels',
      wavFile(new Int16Array(12), { sampleRate: 48_000, channels: 6 }),
      'ERR_UNSUPPORTED_WAV',
      /6 channels/,
    ],
    [
      'an absurd sample rate',
      wavFile(new Int16Array(4), { sampleRate: 1000, channels: 1 }),
      'ERR_UNSUPPORTED_WAV',
      /1000 Hz/,
    ],
    ['a header cut short', plain.subarray(0, 30), 'ERR_TRUNCATED', /before its data chunk/],
    ['an empty body', Buffer.alloc(0), 'ERR_TRUNCATED', /before its data chunk/],
  ])('%s is a readable error', async (_name, file, code, message) => {
    const failure = toPcm(chunked(file, 5));
    await expect(failure).rejects.toThrow(message);
    await expect(failure).rejects.toMatchObject({ name: 'AudioFormatError', code });
  });

  it('rejects a data chunk that comes before fmt', async () => {
    const data = Buffer.from('RIFF\x10\x00\x00\x00WAVEdata\x04\x00\x00\x00\x01\x02\x03\x04', 'latin1');
    await expect(toPcm([data])).rejects.toThrow(/data chunk comes before its fmt/);
  });
});

describe('createResampler', () => {
  it.each([
    [24_000, 48_000],
    [44_100, 48_000],
    [96_000, 48_000],
  ])('%i → %i Hz keeps a constant level constant', (from, to) => {
    const resampler = createResampler(from, to);
    const input = new Int16Array(from / 10).fill(10_000);
    const out = Int16Array.from([...resampler.push(input), ...resampler.flush()]);
    expect(out.length).toBe(Math.ceil((input.length * to) / from));
    // Away from the edges (where the kernel reaches into the silence around the input).
    const middle = out.subarray(100, out.length - 100);
    expect(Math.min(...middle)).toBeGreaterThanOrEqual(9_990);
    expect(Math.max(...middle)).toBeLessThanOrEqual(10_010);
  });

  it('gives the same output whatever the input chunking', () => {
    const input = toneSamples({ hz: 1234, durationMs: 100, sampleRate: 22_050, channels: 1 });
    const whole = createResampler(22_050, 48_000);
    const expected = [...whole.push(input), ...whole.flush()];
    const piecewise = createResampler(22_050, 48_000);
    const got: number[] = [];
    for (let at = 0; at < input.length; at += 37) got.push(...piecewise.push(input.subarray(at, at + 37)));
    got.push(...piecewise.flush());
    expect(got).toEqual(expected);
  });

  it('96 kHz → 48 kHz removes content above the new Nyquist instead of folding it down', () => {
    // 30 kHz would alias to 18 kHz without the low-pass.
    const input = toneSamples({ hz: 30_000, durationMs: 100, sampleRate: 96_000, channels: 1 });
    const resampler = createResampler(96_000, 48_000);
    const out = Int16Array.from([...resampler.push(input), ...resampler.flush()]);
    const peak = out.subarray(500, out.length - 500).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    console.log(`30 kHz at 96 kHz → 48 kHz: residual peak ${peak} of ${Math.round(0.3 * 32767)}`);
    expect(peak).toBeLessThan(100);
  });
});
