import { describe, expect, it } from 'vitest';
import { encodeTone, writeOggOpus } from '../../emulators/tts/ogg.ts';
import { AudioFormatError } from '../../src/audio/errors.ts';
import { analyseOggOpus, waveformPoints } from '../../src/voice-message/analyse.ts';

type Part = { readonly ms: number; readonly amplitude: number };

/** An Ogg Opus file of tone bursts (amplitude 0 is silence), as the TTS service would send it. */
function oggOf(
  parts: readonly Part[],
  o: { frameMs?: 20 | 40 | 60; channels?: 1 | 2; continued?: boolean } = {},
): Buffer {
  const frameMs = o.frameMs ?? 20;
  const channels = o.channels ?? 1;
  const packets = parts.flatMap((part) =>
    encodeTone({ hz: 440, durationMs: part.ms, frameMs, channels, amplitude: part.amplitude }),
  );
  const ms = parts.reduce((sum, part) => sum + part.ms, 0);
  return Buffer.concat(
    writeOggOpus({
      packets,
      channels,
      frameSamples: 48 * frameMs,
      continuedPackets: o.continued ?? false,
      sampleCount: ms * 48,
    }),
  );
}

const bytesOf = (waveform: string): number[] => [...Buffer.from(waveform, 'base64')];

describe('waveformPoints', () => {
  it.each([
    [0, 1],
    [0.05, 1],
    [0.1, 1],
    [0.101, 2],
    [1.2, 12],
    [25.6, 256],
    [600, 256],
  ])('%s s → %s points', (seconds, points) => {
    expect(waveformPoints(seconds)).toBe(points);
  });
});

describe('analyseOggOpus', () => {
  it('reads the length from the last granule, less the pre-skip', async () => {
    expect((await analyseOggOpus(oggOf([{ ms: 1240, amplitude: 0.3 }]))).durationSecs).toBe(1.24);
  });

  it('gives one point per 100 ms, shaped like the speech: loud where it speaks, 0 in its pauses', async () => {
    const facts = await analyseOggOpus(
      oggOf([
        { ms: 500, amplitude: 0.5 },
        { ms: 500, amplitude: 0 },
        { ms: 500, amplitude: 0.5 },
      ]),
    );
    const points = bytesOf(facts.waveform);
    expect(points).toHaveLength(15);
    // A sine at half scale has an RMS level of half a full-scale sine's: about 127.
    for (const i of [1, 2, 3, 11, 12, 13]) expect(points[i]).toBeGreaterThan(100);
    for (const i of [6, 7, 8]) expect(points[i]).toBeLessThan(5);
  });

  it('is flat at 0 for silence', async () => {
    const facts = await analyseOggOpus(oggOf([{ ms: 2000, amplitude: 0 }]));
    expect(bytesOf(facts.waveform)).toEqual(new Array(20).fill(0));
  });

  it('downsamples long audio to 256 points', async () => {
    const facts = await analyseOggOpus(oggOf([{ ms: 30_000, amplitude: 0.3 }], { frameMs: 60 }));
    expect(facts.durationSecs).toBe(30);
    expect(bytesOf(facts.waveform)).toHaveLength(256);
  });

  it.each([
    ['stereo', { channels: 2 as const }],
    ['60 ms packets', { frameMs: 60 as const }],
    ['packets continued across pages', { continued: true }],
  ])('reads %s', async (_name, options) => {
    const facts = await analyseOggOpus(oggOf([{ ms: 800, amplitude: 0.3 }], options));
    expect(facts.durationSecs).toBe(0.8);
    const points = bytesOf(facts.waveform);
    expect(points).toHaveLength(8);
    expect(Math.max(...points)).toBeGreaterThan(60);
  });

  it('refuses what is not Ogg Opus', async () => {
    await expect(analyseOggOpus(Buffer.from('RIFF....WAVEfmt '))).rejects.toThrow(AudioFormatError);
  });
});
