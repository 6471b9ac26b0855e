import { describe, expect, it } from 'vitest';
import { parseTtsConfig } from '../../src/tts/index.ts';

const KEY = 'ttsemu_live_0123456789abcdef0123456789abcdef';
const base = { TTS_BASE_URL: 'https://api.example.com/gateway/tts/v1', TTS_API_KEY: KEY };

describe('parseTtsConfig', () => {
  it.each<[string, Record<string, string | undefined>, { baseUrl: string; form: string }]>([
    [
      'defaults the form to current',
      {},
      { baseUrl: 'https://api.example.com/gateway/tts/v1', form: 'current' },
    ],
    ['reads the variant form', { TTS_API_FORM: 'variant' }, { baseUrl: base.TTS_BASE_URL, form: 'variant' }],
    ['ignores the form case', { TTS_API_FORM: ' Current ' }, { baseUrl: base.TTS_BASE_URL, form: 'current' }],
    [
      'drops trailing slashes but keeps every segment',
      { TTS_BASE_URL: 'http://127.0.0.1:8080/a/b/v1///' },
      { baseUrl: 'http://127.0.0.1:8080/a/b/v1', form: 'current' },
    ],
  ])('%s', (_name, change, expected) => {
    const result = parseTtsConfig({ ...base, ...change });
    expect(result).toStrictEqual({ ok: true, value: { ...expected, apiKey: KEY } });
  });

  it.each<[string, Record<string, string | undefined>, string]>([
    ['a missing URL', { TTS_BASE_URL: undefined }, 'TTS_BASE_URL is missing'],
    ['a relative URL', { TTS_BASE_URL: '/v1' }, 'TTS_BASE_URL is not an absolute URL'],
    ['an ftp URL', { TTS_BASE_URL: 'ftp://host/v1' }, 'TTS_BASE_URL must use http or https'],
    ['a URL with a query', { TTS_BASE_URL: 'https://host/v1?x=1' }, 'TTS_BASE_URL must not carry a query'],
    [
      'a URL with credentials',
      { TTS_BASE_URL: 'https://u:p@host/v1' },
      'TTS_BASE_URL must not carry credentials',
    ],
    ['a missing key', { TTS_API_KEY: undefined }, 'TTS_API_KEY is missing'],
    ['a blank key', { TTS_API_KEY: '   ' }, 'TTS_API_KEY is missing'],
    ['a test key', { TTS_API_KEY: 'ttsemu_test_0123456789abcdef0123' }, 'TTS_API_KEY does not look like'],
    ['a key with a short secret', { TTS_API_KEY: 'ttsemu_live_abc' }, 'TTS_API_KEY is malformed'],
    [
      'a key with spaces inside',
      { TTS_API_KEY: 'ttsemu_live_0123456789 abcdef0123' },
      'TTS_API_KEY is malformed',
    ],
    [
      'a key with a trailing newline',
      { TTS_API_KEY: `${KEY}\n` },
      'TTS_API_KEY has leading or trailing whitespace',
    ],
    ['an unknown form', { TTS_API_FORM: 'v2' }, 'TTS_API_FORM must be "current" or "variant" (got "v2")'],
  ])('refuses %s, naming the variable', (_name, change, expected) => {
    const result = parseTtsConfig({ ...base, ...change });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toContain(expected);
  });

  it('lists every problem at once', () => {
    const result = parseTtsConfig({ TTS_API_FORM: 'x' });
    expect(result.ok ? [] : result.problems.map((problem) => problem.split(' ')[0])).toStrictEqual([
      'TTS_BASE_URL',
      'TTS_API_KEY',
      'TTS_API_FORM',
    ]);
  });

  it.each([
    'ttsemu_test_s3cretS3cretS3cretS3cret',
    'ttsemu_live_s3c',
    'ttsemu_live_s3cretS3cret S3cretS3cret',
    ' ttsemu_live_s3cretS3cretS3cretS3cret',
  ])('never echoes any part of the secret of %j', (key) => {
    const result = parseTtsConfig({ ...base, TTS_API_KEY: key });
    const text = JSON.stringify(result);
    expect(result.ok).toBe(false);
    expect(text).not.toContain('s3c');
    expect(text).not.toContain('S3cret');
  });
});
