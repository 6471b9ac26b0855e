import { TtsProtocolError } from './errors.ts';
import type { Speaker } from './types.ts';

/** Validates the JSON of `GET /speech/speakers`; a wrong shape throws a protocol error naming the field. */
export function parseSpeakers(json: unknown, requestId?: string): Speaker[] {
  const fail = (field: string, expected: string): never => {
    throw new TtsProtocolError(
      `The TTS service sent a malformed speaker list: ${field} should be ${expected}.`,
      {
        status: 200,
        requestId,
      },
    );
  };
  if (!Array.isArray(json)) return fail('the body', 'an array of speakers');
  return json.map((item: unknown, index): Speaker => {
    const at = `speakers[${index}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return fail(at, 'an object');
    const record = item as Record<string, unknown>;
    const text = (key: string): string => {
      const value = record[key];
      return typeof value === 'string' && value.trim() !== ''
        ? value
        : fail(`${at}.${key}`, 'a non-empty string');
    };
    const gender = record.gender;
    if (gender !== null && gender !== undefined && typeof gender !== 'string')
      fail(`${at}.gender`, 'a string or null');
    const languages = record.language_restrictions;
    if (
      languages !== null &&
      languages !== undefined &&
      !(Array.isArray(languages) && languages.every((language) => typeof language === 'string'))
    )
      fail(`${at}.language_restrictions`, 'an array of strings or null');
    return {
      id: text('id'),
      name: text('name'),
      voiceKey: text('voice_key'),
      // Both are nullable; an absent field is read as null (unknown gender, all languages).
      gender: typeof gender === 'string' ? gender : null,
      languages: Array.isArray(languages) ? Object.freeze([...(languages as string[])]) : null,
    };
  });
}
