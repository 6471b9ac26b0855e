import { describe, expect, it } from 'vitest';
import { isOne20msFrame, parseOpusPacket } from '../../src/audio/opus-packet.ts';

const bytes = (...values: number[]): Buffer => Buffer.from(values);
const filled = (length: number, value: number): number[] => new Array<number>(length).fill(value);
const toc = (config: number, code: number, stereo = false): number => (config << 3) | (stereo ? 4 : 0) | code;

describe('parseOpusPacket', () => {
  it.each([
    // [name, packet, frameMs, stereo, frame lengths]
    ['code 0, CELT FB 20 ms', bytes(toc(31, 0), 1, 2, 3), 20, false, [3]],
    ['code 0, stereo flag', bytes(toc(31, 0, true), 9), 20, true, [1]],
    ['code 0, TOC only (DTX)', bytes(toc(31, 0)), 20, false, [0]],
    ['code 1, two equal frames', bytes(toc(30, 1), 1, 2, 3, 4), 10, false, [2, 2]],
    ['code 2, one-byte length', bytes(toc(15, 2), 2, 1, 2, 3, 4, 5), 20, false, [2, 3]],
    ['code 2, two-byte length', bytes(toc(31, 2), 252, 1, ...filled(256, 7), 8), 20, false, [256, 1]],
    ['code 3 CBR', bytes(toc(31, 3), 0x03, 1, 2, 3, 4, 5, 6), 20, false, [2, 2, 2]],
    ['code 3 CBR + padding', bytes(toc(31, 3), 0x43, 2, 1, 2, 3, 4, 5, 6, 0, 0), 20, false, [2, 2, 2]],
    [
      'code 3 padding 255 chain',
      bytes(toc(31, 3), 0x41, 255, 1, 1, 2, 3, 4, ...filled(255, 0)),
      20,
      false,
      [4],
    ],
    ['code 3 VBR', bytes(toc(31, 3), 0x83, 1, 2, 1, 2, 3, 4, 5, 6), 20, false, [1, 2, 3]],
    ['code 3 VBR + padding', bytes(toc(31, 3), 0xc2, 1, 1, 1, 2, 0), 20, false, [1, 1]],
    ['SILK NB 10 ms (config 0)', bytes(toc(0, 0), 1), 10, false, [1]],
    ['SILK NB 40 ms (config 2)', bytes(toc(2, 0), 1), 40, false, [1]],
    ['SILK NB 60 ms (config 3)', bytes(toc(3, 0), 1), 60, false, [1]],
    ['SILK MB 40 ms (config 6)', bytes(toc(6, 0), 1), 40, false, [1]],
    ['SILK MB 60 ms (config 7)', bytes(toc(7, 0), 1), 60, false, [1]],
    ['SILK WB 40 ms (config 10)', bytes(toc(10, 0), 1), 40, false, [1]],
    ['SILK WB 60 ms (config 11)', bytes(toc(11, 0), 1), 60, false, [1]],
    ['Hybrid SWB 10 ms (config 12)', bytes(toc(12, 0), 1), 10, false, [1]],
    ['Hybrid FB 20 ms (config 15)', bytes(toc(15, 0), 1), 20, false, [1]],
    ['CELT NB 2.5 ms (config 16)', bytes(toc(16, 0), 1), 2.5, false, [1]],
    ['CELT WB 5 ms (config 21)', bytes(toc(21, 0), 1), 5, false, [1]],
    ['CELT SWB 10 ms (config 26)', bytes(toc(26, 0), 1), 10, false, [1]],
    ['SILK 60 ms × 2 = 120 ms (the maximum)', bytes(toc(3, 3), 0x02, 1, 2), 60, false, [1, 1]],
  ])('%s', (_name, packet, frameMs, stereo, lengths) => {
    const info = parseOpusPacket(packet);
    expect(info.config).toBe((packet[0] ?? 0) >> 3);
    expect(info.frameMs).toBe(frameMs);
    expect(info.stereo).toBe(stereo);
    expect(info.frames.map((f) => f.length)).toEqual(lengths);
  });

  it('returns the frame bytes themselves, in order', () => {
    const info = parseOpusPacket(bytes(toc(31, 3), 0x83, 1, 2, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf));
    expect(info.frames.map((f) => [...f])).toEqual([[0xa], [0xb, 0xc], [0xd, 0xe, 0xf]]);
  });

  it.each([
    ['empty packet', bytes(), /empty/],
    ['code 1 with an odd payload', bytes(toc(31, 1), 1, 2, 3), /even/],
    ['code 2 first length overruns', bytes(toc(31, 2), 9, 1, 2), /overruns/],
    ['code 2 missing length', bytes(toc(31, 2)), /runs past/],
    ['code 3 without count byte', bytes(toc(31, 3)), /frame count byte/],
    ['code 3 with zero frames', bytes(toc(31, 3), 0x00), /count of 0/],
    ['code 3 longer than 120 ms', bytes(toc(3, 3), 0x03, 1, 2, 3), /120 ms/],
    ['code 3 CBR not divisible', bytes(toc(31, 3), 0x02, 1, 2, 3), /do not split/],
    ['code 3 padding overruns', bytes(toc(31, 3), 0x41, 200, 1), /padding/],
    ['code 3 VBR frame overruns', bytes(toc(31, 3), 0x82, 9, 1), /overruns/],
    ['a frame over 1275 bytes', bytes(toc(31, 0), ...filled(1276, 1)), /1275/],
  ])('rejects %s', (_name, packet, message) => {
    expect(() => parseOpusPacket(packet)).toThrow(message);
    expect(() => parseOpusPacket(packet)).toThrow(expect.objectContaining({ code: 'ERR_BAD_OPUS_PACKET' }));
  });
});

describe('isOne20msFrame', () => {
  it.each([
    ['CELT FB 20 ms, code 0', bytes(toc(31, 0), 1, 2, 3), true],
    ['Hybrid FB 20 ms, code 0, stereo', bytes(toc(15, 0, true), 1), true],
    ['SILK WB 20 ms, code 0', bytes(toc(9, 0), 1), true],
    ['CELT FB 20 ms, code 1 (two frames)', bytes(toc(31, 1), 1, 2), false],
    ['CELT FB 20 ms, code 3', bytes(toc(31, 3), 0x01, 1), false],
    ['CELT 10 ms, code 0', bytes(toc(30, 0), 1), false],
    ['SILK 60 ms, code 0', bytes(toc(3, 0), 1), false],
    ['empty', bytes(), false],
  ])('%s: %s', (_name, packet, expected) => {
    expect(isOne20msFrame(packet)).toBe(expected);
    // Whenever it says one 20 ms frame, the full parse agrees.
    if (expected) expect(parseOpusPacket(packet).frames).toHaveLength(1);
  });

  it('rejects a single frame longer than 1275 bytes', () => {
    expect(() => isOne20msFrame(bytes(toc(31, 0), ...filled(1276, 1)))).toThrow(
      expect.objectContaining({ code: 'ERR_BAD_OPUS_PACKET' }),
    );
  });
});
