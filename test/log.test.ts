import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.ts';

function capture(level: 'debug' | 'info' | 'warn' | 'error', secrets: string[] = []) {
  const lines: string[] = [];
  const logger = createLogger({ level, secrets, write: (line) => lines.push(line), now: () => new Date(0) });
  return { logger, lines };
}

describe('createLogger', () => {
  it('drops lines below the configured level', () => {
    const { logger, lines } = capture('warn');
    logger.info('hidden');
    logger.warn('shown');
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(['shown']);
  });

  it('scrubs secrets from messages, fields and error messages', () => {
    const secret = 'ttsprov_live_abcdef123456';
    const { logger, lines } = capture('debug', [secret]);
    logger.error(`failed with ${secret}`, { header: secret, err: new Error(`key ${secret} refused`) });
    expect(lines.join('\n')).not.toContain(secret);
    expect(lines[0]).toContain('[redacted]');
  });

  it('binds fields in child loggers and serialises errors with their code', () => {
    const { logger, lines } = capture('debug');
    const err = Object.assign(new Error('boom'), { code: 'E_BOOM' });
    logger.child({ guild: '1' }).info('x', { err });
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      guild: '1',
      err: { name: 'Error', code: 'E_BOOM', message: 'boom' },
    });
  });
});
