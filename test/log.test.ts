import { describe, expect, it } from 'vitest';
import { createLogger, type LogLevel } from '../src/log.ts';

function capture(level: LogLevel, secrets: string[] = [], pretty = false) {
  const lines: string[] = [];
  const logger = createLogger({
    level,
    secrets,
    pretty,
    write: (line) => lines.push(line),
    now: () => new Date(0),
  });
  return { logger, lines, json: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('writes one JSON object per line with the time, the level as a word and the message', () => {
    const { logger, json } = capture('debug');
    logger.info('hello', { count: 2 });
    expect(json()).toEqual([
      expect.objectContaining({ time: '1970-01-01T00:00:00.000Z', level: 'info', msg: 'hello', count: 2 }),
    ]);
  });

  it('drops lines below the configured level', () => {
    const { logger, json } = capture('warn');
    logger.info('hidden');
    logger.warn('shown');
    expect(json().map((line) => line.msg)).toEqual(['shown']);
  });

  it('scrubs secrets from messages, fields, bindings, error messages, stacks and causes', () => {
    const secret = 'ttsprov_live_abcdef123456';
    const { logger, lines } = capture('debug', [secret]);
    const cause = new Error(`socket to ${secret} reset`);
    logger
      .child({ bound: secret })
      .error(`failed with ${secret}`, { header: secret, err: new Error(`key ${secret} refused`, { cause }) });
    expect(lines.join('\n')).not.toContain(secret);
    expect(lines[0]).toContain('[redacted]');
  });

  it('censors fields secrets travel under, whatever their value (pino redaction)', () => {
    const { logger, json } = capture('debug');
    logger.info('request', {
      token: 'short',
      headers: { authorization: 'Bot abc', 'x-api-key': 'k', accept: 'audio/ogg' },
      config: { apiKey: 'k2', baseUrl: 'http://tts' },
    });
    expect(json()[0]).toMatchObject({
      token: '[redacted]',
      headers: { authorization: '[redacted]', 'x-api-key': '[redacted]', accept: 'audio/ogg' },
      config: { apiKey: '[redacted]', baseUrl: 'http://tts' },
    });
  });

  it('binds fields in child loggers (server, shard, utterance) on every line', () => {
    const { logger, json } = capture('debug');
    const child = logger.child({ shard: 0 }).child({ guild: '1' }).child({ utterance: 'u7' });
    child.info('a');
    child.warn('b', { extra: true });
    for (const line of json()) expect(line).toMatchObject({ shard: 0, guild: '1', utterance: 'u7' });
  });

  it('logs errors with their type, code, message, stack and cause chain', () => {
    const { logger, json } = capture('debug');
    const root = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const err = Object.assign(new Error('boom', { cause: root }), { code: 'E_BOOM', status: 503 });
    logger.warn('x', { err, other: new TypeError('bad') });
    const line = json()[0] ?? {};
    expect(line).toMatchObject({
      err: {
        type: 'Error',
        code: 'E_BOOM',
        status: 503,
        message: 'boom',
        stack: expect.stringContaining('log.test.ts'),
        cause: {
          type: 'Error',
          code: 'ECONNREFUSED',
          message: 'connect ECONNREFUSED',
          stack: expect.any(String),
        },
      },
      other: { type: 'TypeError', message: 'bad', stack: expect.stringContaining('TypeError: bad') },
    });
  });

  it('survives a cause cycle and bigint fields', () => {
    const { logger, json } = capture('debug');
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    logger.error('cycle', { err: a, big: 10n });
    expect(json()[0]).toMatchObject({ err: { message: 'a', cause: { message: 'b' } } });
  });

  it('writes readable lines for a terminal (pino-pretty), still scrubbed', () => {
    const secret = 'ttsprov_live_abcdef123456';
    const { logger, lines } = capture('debug', [secret], true);
    logger.child({ guild: '42' }).warn(`refused ${secret}`, { err: new Error('nope') });
    const text = lines.join('\n');
    expect(text).toMatch(/WARN/);
    expect(text).toContain('refused [redacted]');
    expect(text).toContain('guild: "42"');
    expect(text).not.toContain(secret);
    expect(() => JSON.parse(lines[0] ?? '')).toThrow();
  });
});
