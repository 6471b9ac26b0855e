import { describe, expect, it } from 'vitest';
import { sandboxTtsChoice } from '../../sandbox/server.ts';
import { isUnconfigured } from '../../src/config.ts';

describe('isUnconfigured: when npm start opens the sandbox', () => {
  it.each([
    [{}, true],
    [{ DISCORD_TOKEN: '', TTS_API_KEY: '  ', LOG_LEVEL: 'debug', TTS_API_FORM: 'current' }, true],
    [{ DISCORD_TOKEN: 'x' }, false],
    [{ DISCORD_APPLICATION_ID: '1' }, false],
    [{ DISCORD_REST_URL: 'http://proxy/api' }, false],
    [{ TTS_BASE_URL: 'https://tts/v1' }, false],
    [{ TTS_API_KEY: 'k_live_0123456789abcdef' }, false],
  ])('%j → %s', (env, expected) => {
    expect(isUnconfigured(env)).toBe(expected);
  });
});

describe('sandboxTtsChoice: which TTS service the sandbox speaks through', () => {
  it('uses the emulator without TTS configuration, the real service with both variables', () => {
    expect(sandboxTtsChoice({})).toEqual({ ok: true, tts: 'emulated' });
    expect(sandboxTtsChoice({ TTS_BASE_URL: 'https://tts/v1', TTS_API_KEY: 'k_live_x' })).toEqual({
      ok: true,
      tts: 'real',
    });
  });

  it('refuses half of it, naming the missing variable and never the key', () => {
    const key = 'k_live_secret0123456789';
    const onlyKey = sandboxTtsChoice({ TTS_API_KEY: key });
    expect(onlyKey).toEqual({ ok: false, problems: [expect.stringMatching(/^TTS_BASE_URL is missing/)] });
    expect(JSON.stringify(onlyKey)).not.toContain(key);
    expect(sandboxTtsChoice({ TTS_BASE_URL: 'https://tts/v1' })).toEqual({
      ok: false,
      problems: [expect.stringMatching(/^TTS_API_KEY is missing/)],
    });
  });
});
