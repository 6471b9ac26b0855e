import { describe, expect, it } from 'vitest';
import { analyse, decodeOpus, packetDurationMs, parseWav, toMono } from '../../emulators/support/audio.ts';
import { encodeTone, toneSamples } from '../../emulators/tts/ogg.ts';
import { pcmBytes, wavHeader } from '../../emulators/tts/wav.ts';

const silence = (ms: number, rate = 48_000): Int16Array => new Int16Array((ms * rate) / 1000);
const tone = (hz: number, ms: number, rate = 48_000): Int16Array =>
  toneSamples({ hz, durationMs: ms, sampleRate: rate, channels: 1 });
const join = (...parts: Int16Array[]): Int16Array => {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

describe('packetDurationMs', () => {
  it.each([
    // [TOC byte, extra bytes, ms]: config in the top 5 bits, frame-count code in the low 2 (RFC 6716 §3.1).
    [(0 << 3) | 0, [], 10], // SILK NB 10 ms
    [(1 << 3) | 0, [], 20], // SILK NB 20 ms
    [(2 << 3) | 0, [], 40], // SILK NB 40 ms
    [(11 << 3) | 0, [], 60], // SILK WB 60 ms
    [(12 << 3) | 0, [], 10], // Hybrid SWB 10 ms
    [(15 << 3) | 0, [], 20], // Hybrid FB 20 ms
    [(16 << 3) | 0, [], 2.5], // CELT NB 2.5 ms
    [(29 << 3) | 0, [], 5], // CELT FB 5 ms
    [(31 << 3) | 0, [], 20], // CELT FB 20 ms
    [(31 << 3) | 1, [], 40], // two equal frames
    [(31 << 3) | 2, [], 40], // two frames of different sizes
    [(31 << 3) | 3, [3], 60], // code 3, three frames
    [(31 << 3) | 3, [0x80 | 2], 40], // code 3 with the VBR flag set: the count is the low 6 bits
    [(11 << 3) | 1, [], 120], // two 60 ms SILK frames, the longest packet
  ])('TOC %i (+%j) → %s ms', (toc, extra, ms) => {
    expect(packetDurationMs(Buffer.from([toc, ...extra, 0, 0]).subarray(0, 1 + extra.length + 1))).toBe(ms);
  });

  it('rejects an empty packet', () => {
    expect(() => packetDurationMs(Buffer.alloc(0))).toThrow(/empty/);
  });
});

describe('analyse', () => {
  it('finds tones, their lengths and pitches, and the gaps between them', () => {
    const pcm = join(silence(100), tone(220, 500), silence(200), tone(660, 300), silence(50));
    const result = analyse(pcm);
    expect(result.durationMs).toBeCloseTo(1150, 6);
    expect(result.segments).toHaveLength(2);
    const [first, second] = result.segments;
    expect(first?.startMs).toBeCloseTo(100, -1);
    expect(first?.durationMs).toBeCloseTo(500, -1);
    expect(first?.dominantHz).toBeCloseTo(220, 0);
    expect(second?.durationMs).toBeCloseTo(300, -1);
    expect(second?.dominantHz).toBeCloseTo(660, 0);
    expect(result.gapsMs[0]).toBeCloseTo(200, -1);
    expect(result.soundMs).toBeCloseTo(800, -1);
  });

  it.each([110, 220, 330, 440, 550, 880, 1000, 3000])('measures a %i Hz tone to within 1%%', (hz) => {
    const [segment] = analyse(tone(hz, 300)).segments;
    expect(Math.abs((segment?.dominantHz ?? 0) - hz) / hz).toBeLessThan(0.01);
  });

  it('merges sounds separated by less than minGapMs and works at other sample rates', () => {
    const pcm = join(tone(440, 200, 24_000), silence(20, 24_000), tone(440, 200, 24_000));
    expect(analyse(pcm, { sampleRate: 24_000 }).segments).toHaveLength(1);
    const split = analyse(pcm, { sampleRate: 24_000, minGapMs: 10 });
    expect(split.segments).toHaveLength(2);
    for (const segment of split.segments) expect(segment.durationMs).toBeCloseTo(200, -1);
    expect(split.segments[0]?.dominantHz).toBeCloseTo(440, 0);
  });

  it('reports no segment for silence or noise under the threshold', () => {
    const quiet = new Int16Array(4800).map((_, i) => (i % 7) - 3);
    expect(analyse(quiet).segments).toEqual([]);
    expect(analyse(new Int16Array(0))).toEqual({ durationMs: 0, soundMs: 0, segments: [], gapsMs: [] });
  });
});

describe('decodeOpus', () => {
  it('mixes stereo down to mono at 48 kHz', () => {
    const packets = encodeTone({ hz: 550, durationMs: 300, frameMs: 20, channels: 2 });
    const pcm = decodeOpus(packets, 2);
    expect(pcm.length).toBe(packets.length * 960);
    const [segment] = analyse(pcm).segments;
    expect(segment?.dominantHz).toBeCloseTo(550, 0);
  });
});

describe('parseWav', () => {
  const samples = new Int16Array([1, -2, 300, -32768, 32767, 0]);

  it('reads a canonical header and its samples', () => {
    const wav = Buffer.concat([
      wavHeader({ sampleRate: 24_000, channels: 2, dataBytes: 12 }),
      pcmBytes(samples),
    ]);
    expect(parseWav(wav)).toEqual({ sampleRate: 24_000, channels: 2, samples });
  });

  it('skips unknown chunks and reads a streamed data size (0xFFFFFFFF) to the end', () => {
    const header = wavHeader({ sampleRate: 16_000, channels: 1, dataBytes: 0 });
    header.writeUInt32LE(0xffffffff, 40);
    const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([3, 0, 0, 0]), Buffer.from('abc\0')]);
    const wav = Buffer.concat([header.subarray(0, 36), list, header.subarray(36), pcmBytes(samples)]);
    expect(parseWav(wav)).toEqual({ sampleRate: 16_000, channels: 1, samples });
  });

  it.each([
    ['not RIFF', Buffer.from('OggS0000WAVE')],
    ['no data chunk', wavHeader({ sampleRate: 8000, channels: 1, dataBytes: 0 }).subarray(0, 36)],
  ])('rejects a file with %s', (_name, data) => {
    expect(() => parseWav(data)).toThrow();
  });

  it('rejects non-16-bit PCM', () => {
    const wav = wavHeader({ sampleRate: 8000, channels: 1, dataBytes: 0 });
    wav.writeUInt16LE(3, 20);
    expect(() => parseWav(wav)).toThrow(/unsupported/);
  });

  it('averages channels with toMono', () => {
    expect(toMono(new Int16Array([100, 300, -10, 10]), 2)).toEqual(new Int16Array([200, 0]));
  });
});
