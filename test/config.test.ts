import { describe, expect, it } from 'vitest';
import { parseConfig, secretsOf } from '../src/config.ts';

const TOKEN = `${'M'.repeat(24)}.${'a'.repeat(6)}.${'b'.repeat(38)}`;
const KEY = 'ttsprov_live_0123456789abcdef0123';
const valid = {
  DISCORD_TOKEN: TOKEN,
  DISCORD_APPLICATION_ID: '123456789012345678',
  TTS_BASE_URL: 'https://tts.example/gateway/v1/',
  TTS_API_KEY: KEY,
};

describe('parseConfig', () => {
  it('gives a shard process of a manager the machine’s one audio cache folder and all of its megabytes', () => {
    const shard = parseConfig({
      ...valid,
      SHARDING_MANAGER: 'true',
      SHARDS: '1',
      SHARD_COUNT: '4',
      AUDIO_CACHE_MB: '256',
    });
    expect(shard.ok && shard.value.cache).toMatchObject({
      maxBytes: 256 * 1024 * 1024,
      dir: 'data/audio-cache',
    });
    // One process, whatever shards it runs inside: the whole folder and bound.
    const alone = parseConfig({ ...valid, SHARD_COUNT: '4', AUDIO_CACHE_MB: '256' });
    expect(alone.ok && alone.value.cache).toMatchObject({
      maxBytes: 256 * 1024 * 1024,
      dir: 'data/audio-cache',
    });
  });

  it('applies the documented defaults', () => {
    const result = parseConfig(valid);
    expect(result).toMatchObject({
      ok: true,
      value: {
        discord: { token: TOKEN, applicationId: '123456789012345678', restUrl: undefined },
        tts: { baseUrl: 'https://tts.example/gateway/v1', form: 'current', defaultSpeaker: undefined },
        database: { kind: 'sqlite', path: './data/herald.sqlite' },
        logLevel: 'info',
        idleTimeoutMs: 300_000,
      },
    });
  });

  it('reads every optional variable', () => {
    const result = parseConfig({
      ...valid,
      DISCORD_REST_URL: 'http://127.0.0.1:9/api',
      TTS_API_FORM: 'variant',
      TTS_DEFAULT_SPEAKER: 'Ada',
      DATABASE_URL: 'sqlite:/var/lib/herald/db.sqlite',
      LOG_LEVEL: 'DEBUG',
      IDLE_TIMEOUT_SECONDS: '60',
      UTTERANCE_PAUSE_MS: '0',
      VOICE_FRAMES_PER_PACKET: '1',
      HERALD_RUSH_SCHEDULER: 'OFF',
    });
    expect(result).toMatchObject({
      ok: true,
      value: {
        discord: { restUrl: 'http://127.0.0.1:9/api' },
        tts: { form: 'variant', defaultSpeaker: 'Ada' },
        database: { kind: 'sqlite', path: '/var/lib/herald/db.sqlite' },
        logLevel: 'debug',
        idleTimeoutMs: 60_000,
        utterancePauseMs: 0,
        framesPerPacket: 1,
        rushScheduler: false,
      },
    });
    expect(parseConfig(valid)).toMatchObject({
      ok: true,
      value: { utterancePauseMs: 120, framesPerPacket: 3, rushScheduler: true },
    });
  });

  it('lists every problem at once, each naming its variable', () => {
    const result = parseConfig({
      DISCORD_APPLICATION_ID: 'abc',
      DISCORD_REST_URL: 'ftp://x',
      TTS_API_KEY: 'not-a-key-but-a-secret-value',
      DATABASE_URL: 'mysql://db/herald',
      LOG_LEVEL: 'loud',
      IDLE_TIMEOUT_SECONDS: 'soon',
      UTTERANCE_PAUSE_MS: '2500',
      VOICE_FRAMES_PER_PACKET: '4',
      HERALD_RUSH_SCHEDULER: 'sometimes',
    });
    expect(result.ok).toBe(false);
    const problems = result.ok ? [] : result.problems;
    for (const name of [
      'DISCORD_TOKEN',
      'DISCORD_APPLICATION_ID',
      'DISCORD_REST_URL',
      'TTS_BASE_URL',
      'TTS_API_KEY',
      'DATABASE_URL',
      'LOG_LEVEL',
      'IDLE_TIMEOUT_SECONDS',
      'UTTERANCE_PAUSE_MS',
      'VOICE_FRAMES_PER_PACKET',
      'HERALD_RUSH_SCHEDULER',
    ]) {
      expect(
        problems.some((problem) => problem.startsWith(name)),
        name,
      ).toBe(true);
    }
    expect(problems.join('\n')).not.toContain('not-a-key-but-a-secret-value');
  });

  it.each([
    ['postgres://herald:s3cret@db.internal:5432/herald', undefined, 10],
    ['postgresql://herald@db/herald', '3', 3],
  ])('reads %s as PostgreSQL with a pool (DATABASE_POOL_SIZE %s)', (url, pool, poolSize) => {
    const result = parseConfig({
      ...valid,
      DATABASE_URL: url,
      ...(pool === undefined ? {} : { DATABASE_POOL_SIZE: pool }),
    });
    expect(result.ok && result.value.database).toEqual({ kind: 'postgres', url, poolSize });
  });

  it('refuses a bad pool size and keeps the database password out of problems and logs', () => {
    const url = 'postgres://herald:s3cret-pw@db/herald';
    const result = parseConfig({ ...valid, DATABASE_URL: url, DATABASE_POOL_SIZE: '0' });
    expect(result.ok).toBe(false);
    const problems = result.ok ? [] : result.problems;
    expect(problems).toEqual(['DATABASE_POOL_SIZE must be a whole number from 1 to 100.']);
    const good = parseConfig({ ...valid, DATABASE_URL: url });
    expect(good.ok && secretsOf(good.value)).toContain('s3cret-pw');
  });

  it('never echoes a malformed token', () => {
    const result = parseConfig({ ...valid, DISCORD_TOKEN: 'short-secret-token' });
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain('short-secret-token');
  });

  it('keeps the operations endpoint off by default, on loopback when a port is given', () => {
    expect(parseConfig(valid)).toMatchObject({
      ok: true,
      value: { ops: { port: undefined, host: '127.0.0.1', token: undefined } },
    });
    expect(
      parseConfig({ ...valid, METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', METRICS_TOKEN: 'x'.repeat(24) }),
    ).toMatchObject({ ok: true, value: { ops: { port: 9464, host: '0.0.0.0', token: 'x'.repeat(24) } } });
  });

  it('refuses a bad METRICS_PORT and a short METRICS_TOKEN without echoing it, and scrubs the token', () => {
    const result = parseConfig({ ...valid, METRICS_PORT: '70000', METRICS_TOKEN: 'shorttok' });
    const problems = result.ok ? [] : result.problems;
    expect(problems.some((problem) => problem.startsWith('METRICS_PORT'))).toBe(true);
    expect(problems.some((problem) => problem.startsWith('METRICS_TOKEN'))).toBe(true);
    expect(problems.join('\n')).not.toContain('shorttok');
    const ok = parseConfig({ ...valid, METRICS_TOKEN: 't'.repeat(20) });
    expect(ok.ok && secretsOf(ok.value)).toContain('t'.repeat(20));
  });
});
