import { describe, expect, it } from 'vitest';
import { contained } from '../../src/discord/contain.ts';
import { createLogger } from '../../src/log.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('contained', () => {
  it('keeps a throwing handler from escaping, and logs it with the event and the server', () => {
    const { logger, lines } = capture();
    const handler = contained(
      logger,
      'voice state',
      (guildId: string) => guildId,
      () => {
        throw new Error('boom in one server');
      },
    );
    expect(() => handler('111')).not.toThrow();
    expect(lines).toMatchObject([
      { level: 'error', event: 'voice state', guild: '111', msg: expect.stringContaining('other servers') },
    ]);
    expect(JSON.stringify(lines[0])).toContain('boom in one server');
  });

  it('logs a rejected async handler instead of leaving an unhandled rejection', async () => {
    const { logger, lines } = capture();
    const handler = contained(
      logger,
      'message',
      () => '222',
      async () => {
        throw new Error('async boom');
      },
    );
    handler();
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toMatchObject([{ event: 'message', guild: '222' }]);
  });

  it('passes the arguments through and stays silent when the handler succeeds', () => {
    const { logger, lines } = capture();
    const seen: number[] = [];
    contained(
      logger,
      'x',
      (_a: number, _b: number) => null,
      (a: number, b: number) => seen.push(a + b),
    )(2, 3);
    expect(seen).toEqual([5]);
    expect(lines).toEqual([]);
  });
});
