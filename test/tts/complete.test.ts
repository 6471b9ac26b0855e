import { describe, expect, it } from 'vitest';
import { wavChunks } from '../../emulators/tts/audio.ts';
import { writeOggOpus } from '../../emulators/tts/ogg.ts';
import { AudioFormatError } from '../../src/audio/errors.ts';
import { judgeCompleteness } from '../../src/tts/complete.ts';

// Whether a body that ended cleanly is a whole clip. The judge reads Ogg page headers and the WAV header only, so
// stand-in packets serve.

/** One second of Ogg Opus: 50 pages of one 20 ms packet each, after OpusHead and OpusTags; the last ends it. */
const pages = writeOggOpus({
  packets: Array.from({ length: 50 }, () => Buffer.alloc(40, 0xfc)),
  channels: 1,
  frameSamples: 960,
  sampleCount: 48_000,
});
const ogg = Buffer.concat(pages);
const wav = Buffer.concat(wavChunks(440, 1_000, 1).map((chunk) => chunk.data));

/** Feeds `body` to a judge in `size`-byte pieces; the error it ends in, if any, and the bytes it was given. */
function run(body: Buffer, format: 'opus' | 'wav', durationS: number | undefined, size = 4096) {
  const judge = judgeCompleteness({ format, durationS });
  let bytes = 0;
  for (let at = 0; at < body.length; at += size) {
    const piece = body.subarray(at, at + size);
    judge.write(piece);
    bytes += piece.length;
  }
  return { error: judge.end(), bytes };
}

describe('judgeCompleteness', () => {
  it.each([
    ['a whole Ogg stream', ogg, 1],
    ['a whole Ogg stream in 7-byte pieces', ogg, 1, 7],
    ['a whole Ogg stream with no announced duration', ogg, undefined],
    ['a whole Ogg stream a frame short of the announcement', ogg, 1.02],
    ['a whole WAV', wav, 1],
    [
      'a body that is neither (its decoder reports it)',
      Buffer.from('not audio at all, really, whatever the service says'),
      1,
    ],
  ] as const)('passes %s through unchanged', (_name, body, durationS, size: number = 4096) => {
    const format = body === wav ? 'wav' : 'opus';
    expect(run(body, format, durationS, size)).toEqual({ error: undefined, bytes: body.length });
  });

  it.each([
    ['an empty body', Buffer.alloc(0), 'opus', 1, /body was empty/],
    [
      'Ogg pages up to half, no end-of-stream page',
      Buffer.concat(pages.slice(0, 27)),
      'opus',
      1,
      /does not end/,
    ],
    ['Ogg cut inside a page', ogg.subarray(0, ogg.length - 10), 'opus', 1, /page was cut/],
    ['a whole Ogg stream shorter than announced', ogg, 'opus', 2, /\d s of the 2 s announced/],
    ['a WAV short of its header’s size', wav.subarray(0, wav.length / 2), 'wav', 1, /PCM bytes/],
    ['an empty WAV', Buffer.alloc(0), 'wav', 1, /body was empty/],
  ] as const)('fails %s as cut short', (_name, body, format, durationS, said) => {
    const { error } = run(body, format, durationS);
    expect(error).toBeInstanceOf(AudioFormatError);
    expect((error as AudioFormatError).code).toBe('ERR_TRUNCATED');
    expect((error as Error).message).toMatch(said);
  });
});
