import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cacheKey, decodeEntry, type EntryMeta, encodeEntry } from '../../src/cache/index.ts';

const META: EntryMeta = {
  format: 'opus',
  contentType: 'audio/ogg',
  sampleRate: 24_000,
  durationS: 1.2,
  characters: 12,
  costUsd: 0.0012,
  createdAt: 1_000,
};
const PARTS = {
  text: 'hello there',
  speakerId: 'a',
  temperature: 1,
  form: 'current',
  baseUrl: 'https://x/v1',
} as const;

describe('cacheKey', () => {
  const secret = randomBytes(32);
  it('is stable, and changes with every part and with the secret', () => {
    const key = cacheKey(secret, PARTS);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(cacheKey(secret, { ...PARTS })).toBe(key);
    for (const change of [
      { text: 'hello there!' },
      { speakerId: 'b' },
      { temperature: 1.5 },
      { form: 'variant' as const },
      { baseUrl: 'https://y/v1' },
    ]) {
      expect(cacheKey(secret, { ...PARTS, ...change })).not.toBe(key);
    }
    expect(cacheKey(randomBytes(32), PARTS)).not.toBe(key);
  });

  it('treats an unset temperature as the service default, and ignores it in the variant form', () => {
    expect(cacheKey(secret, { ...PARTS, temperature: undefined })).toBe(cacheKey(secret, PARTS));
    const variant = { ...PARTS, form: 'variant' as const };
    expect(cacheKey(secret, { ...variant, temperature: 1.7 })).toBe(cacheKey(secret, variant));
  });

  it('cannot be confused by separators inside a field', () => {
    expect(cacheKey(secret, { ...PARTS, speakerId: 'a', text: 'b|c' })).not.toBe(
      cacheKey(secret, { ...PARTS, speakerId: 'a|b', text: 'c' }),
    );
  });
});

describe('cache files', () => {
  const audio = randomBytes(5_000);
  it('round-trips audio and metadata', () => {
    const decoded = decodeEntry(encodeEntry(META, audio));
    expect(decoded?.audio.equals(audio)).toBe(true);
    expect(decoded?.meta).toEqual(META);
  });

  it.each([
    ['truncated audio', (file: Buffer) => file.subarray(0, file.length - 1)],
    ['truncated header', (file: Buffer) => file.subarray(0, 20)],
    ['empty', () => Buffer.alloc(0)],
    ['a flipped byte in the audio', (file: Buffer) => flip(file, file.length - 10)],
    ['a flipped byte in the magic', (file: Buffer) => flip(file, 0)],
    ['extra bytes', (file: Buffer) => Buffer.concat([file, Buffer.from([0])])],
    [
      'a huge header length',
      (file: Buffer) => Buffer.concat([file.subarray(0, 8), Buffer.from([255, 255, 255, 255])]),
    ],
  ])('rejects %s', (_name, damage) => {
    expect(decodeEntry(damage(encodeEntry(META, audio)))).toBeUndefined();
  });
});

function flip(file: Buffer, at: number): Buffer {
  const copy = Buffer.from(file);
  copy[at] = (copy[at] ?? 0) ^ 0xff;
  return copy;
}
