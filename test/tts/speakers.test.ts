import { describe, expect, it } from 'vitest';
import { TtsProtocolError } from '../../src/tts/index.ts';
import { parseSpeakers } from '../../src/tts/speakers.ts';

const wire = {
  id: '0b5a6d4e-3f1c-4a8e-9d2b-7c1e5f3a9b01',
  name: 'Bella',
  voice_key: 'af_bella',
  gender: 'female',
  language_restrictions: ['en'],
};

describe('parseSpeakers', () => {
  it('camel-cases the wire fields', () => {
    expect(parseSpeakers([wire])).toStrictEqual([
      { id: wire.id, name: 'Bella', voiceKey: 'af_bella', gender: 'female', languages: ['en'] },
    ]);
  });

  it('reads null and absent nullable fields as null', () => {
    const [nulls, absent] = parseSpeakers([
      { ...wire, gender: null, language_restrictions: null },
      { id: wire.id, name: 'X', voice_key: wire.id },
    ]);
    expect(nulls).toMatchObject({ gender: null, languages: null });
    expect(absent).toMatchObject({ gender: null, languages: null, voiceKey: wire.id });
  });

  it.each<[string, unknown, string]>([
    ['an object instead of an array', { speakers: [] }, 'the body should be an array'],
    ['a string item', ['Bella'], 'speakers[0] should be an object'],
    ['a missing id', [wire, { ...wire, id: undefined }], 'speakers[1].id should be a non-empty string'],
    ['a numeric name', [{ ...wire, name: 7 }], 'speakers[0].name should be a non-empty string'],
    ['a missing voice_key', [{ ...wire, voice_key: undefined }], 'speakers[0].voice_key'],
    ['a numeric gender', [{ ...wire, gender: 1 }], 'speakers[0].gender should be a string or null'],
    [
      'a string of languages',
      [{ ...wire, language_restrictions: 'en' }],
      'speakers[0].language_restrictions',
    ],
    [
      'a language that is no string',
      [{ ...wire, language_restrictions: ['en', 3] }],
      'language_restrictions',
    ],
  ])('refuses %s, naming the field', (_name, json, expected) => {
    expect(() => parseSpeakers(json, 'req_1')).toThrowError(TtsProtocolError);
    expect(() => parseSpeakers(json, 'req_1')).toThrowError(expected);
  });
});
