import { describe, expect, it } from 'vitest';
import { AudioFormatError } from '../src/audio/errors.ts';
import { createLogger } from '../src/log.ts';
import { describeFailure } from '../src/replies.ts';

describe('describeFailure', () => {
  const logged: { level: string; msg: string }[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => logged.push(JSON.parse(line)) });

  it.each([
    ['ERR_TRUNCATED', 'Ogg stream ended inside a page', /audio stopped short/],
    ['ERR_OGG_CRC', 'bad checksum', /sent audio I could not play/],
  ] as const)(
    '%s from the service: the service is named, no error id, a warning not an error',
    (code, message, said) => {
      logged.length = 0;
      const sentence = describeFailure(new AudioFormatError(code, message), logger);
      expect(sentence).toMatch(said);
      expect(sentence).not.toMatch(/error id/);
      expect(logged.map((line) => line.level)).toEqual(['warn']);
    },
  );

  it('anything unexpected: an error id the operator can find in the log', () => {
    logged.length = 0;
    const sentence = describeFailure(new Error('boom'), logger);
    const id = /error id ([0-9a-f]{8})/.exec(sentence)?.[1];
    expect(id).toBeDefined();
    expect(logged).toMatchObject([{ level: 'error', errorId: id }]);
  });
});
