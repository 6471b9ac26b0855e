import { describe, expect, it } from 'vitest';
import {
  countCharacters,
  type GenerateRequest,
  MAX_TEXT_CHARACTERS,
  TtsInvalidRequestError,
  validateGenerateRequest,
} from '../../src/tts/index.ts';
import { generateBody } from '../../src/tts/validate.ts';

const SPEAKER = '0b5a6d4e-3f1c-4a8e-9d2b-7c1e5f3a9b01';
const valid: GenerateRequest = { text: 'Hello there', speakerId: SPEAKER };

describe('countCharacters', () => {
  it.each([
    ['', 0],
    ['abc', 3],
    ['é', 1],
    ['e\u0301', 2], // a combining accent is its own code point
    ['😀', 1], // two UTF-16 units, one code point
    ['🇫🇷', 2], // a flag is two regional indicators
    ['👍🏽', 2], // emoji + skin tone modifier
  ])('%j has %i code points', (text, expected) => {
    expect(countCharacters(text)).toBe(expected);
  });
});

describe('validateGenerateRequest', () => {
  const atLimitOfEmoji = '😀'.repeat(MAX_TEXT_CHARACTERS);
  it.each<[string, Partial<GenerateRequest>, 'current' | 'variant', string | undefined]>([
    ['a plain request', {}, 'current', undefined],
    ['an empty text', { text: '' }, 'current', 'text'],
    ['a text of whitespace', { text: ' \n\t ' }, 'current', 'text'],
    ['30 000 emoji (60 000 UTF-16 units)', { text: atLimitOfEmoji }, 'current', undefined],
    ['30 001 characters', { text: 'a'.repeat(MAX_TEXT_CHARACTERS + 1) }, 'current', 'text'],
    ['a speaker name', { speakerId: 'Bella' }, 'current', 'speakerId'],
    ['a UUID with braces', { speakerId: `{${SPEAKER}}` }, 'current', 'speakerId'],
    ['an upper-case UUID', { speakerId: SPEAKER.toUpperCase() }, 'current', undefined],
    ['language en', { language: 'en' }, 'current', undefined],
    ['language fr', { language: 'fr' }, 'current', 'language'],
    ['language en-US', { language: 'en-US' }, 'current', 'language'],
    ['temperature 0.5', { temperature: 0.5 }, 'current', undefined],
    ['temperature 2.0', { temperature: 2 }, 'current', undefined],
    ['temperature 0.49', { temperature: 0.49 }, 'current', 'temperature'],
    ['temperature 2.01', { temperature: 2.01 }, 'current', 'temperature'],
    ['temperature NaN', { temperature: Number.NaN }, 'current', 'temperature'],
    ['temperature out of range in the variant form', { temperature: 3 }, 'variant', 'temperature'],
    ['format opus in the current form', { format: 'opus' }, 'current', undefined],
    ['format wav in the current form', { format: 'wav' }, 'current', 'format'],
    ['format wav in the variant form', { format: 'wav' }, 'variant', undefined],
    ['format opus in the variant form', { format: 'opus' }, 'variant', 'format'],
  ])('%s → %s', (_name, change, form, field) => {
    const error = validateGenerateRequest({ ...valid, ...change }, form);
    if (field === undefined) {
      expect(error).toBeUndefined();
    } else {
      expect(error).toBeInstanceOf(TtsInvalidRequestError);
      expect(error).toMatchObject({ code: 'TTS_INVALID_REQUEST', local: true, field });
      expect(error?.status).toBeUndefined();
    }
  });

  it('states the length and the limit for an over-long text', () => {
    const error = validateGenerateRequest({ ...valid, text: 'a'.repeat(30_005) }, 'current');
    expect(error?.message).toContain('30005');
    expect(error?.message).toContain('30000');
  });
});

describe('generateBody', () => {
  it.each<[string, Partial<GenerateRequest>, 'current' | 'variant', Record<string, unknown>]>([
    ['current, minimal', {}, 'current', { text: 'Hello there', speaker_id: SPEAKER, format: 'opus' }],
    [
      'current, all fields',
      { language: 'en', temperature: 1.3 },
      'current',
      { text: 'Hello there', speaker_id: SPEAKER, language: 'en', format: 'opus', temperature: 1.3 },
    ],
    [
      'variant drops temperature',
      { temperature: 1.3 },
      'variant',
      { text: 'Hello there', speaker_id: SPEAKER, format: 'wav' },
    ],
  ])('%s', (_name, change, form, expected) => {
    expect(generateBody({ ...valid, ...change }, form)).toStrictEqual(expected);
  });
});
