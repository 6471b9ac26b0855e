import { DiscordAPIError, type RepliableInteraction } from 'discord.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AudioFormatError } from '../../src/audio/errors.ts';
import {
  acknowledgeEphemeral,
  DEFER_AFTER_MS,
  describeFailure,
  isExpiredInteraction,
} from '../../src/discord/replies.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import { DatabaseTimeoutError } from '../../src/storage/index.ts';

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

  it('a database that did not answer: a plain sentence, no error id, and the cause in the log', () => {
    logged.length = 0;
    const sentence = describeFailure(new DatabaseTimeoutError(10_000), logger);
    expect(sentence).toMatch(/database is not answering/);
    expect(sentence).not.toMatch(/error id|PostgreSQL|postgres:/);
    expect(logged).toMatchObject([{ level: 'error', msg: 'the database did not answer in time' }]);
  });

  it('a refused connection that did not come from the database is not taken for one', () => {
    logged.length = 0;
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:443'), { code: 'ECONNREFUSED' });
    expect(describeFailure(refused, logger)).toMatch(/error id [0-9a-f]{8}/);
  });

  it('anything unexpected: an error id the operator can find in the log', () => {
    logged.length = 0;
    const sentence = describeFailure(new Error('boom'), logger);
    const id = /error id ([0-9a-f]{8})/.exec(sentence)?.[1];
    expect(id).toBeDefined();
    expect(logged).toMatchObject([{ level: 'error', errorId: id }]);
  });
});

/** The calls an interaction receives, in order; the deferral's REST call resolves when `settle` is called. */
function fakeInteraction(createdTimestamp = Date.now()) {
  const calls: string[] = [];
  let settle = (): void => {};
  const interaction = {
    createdTimestamp,
    deferred: false,
    replied: false,
    deferReply: () => {
      calls.push('defer');
      return new Promise<void>((resolve) => {
        settle = () => {
          interaction.deferred = true;
          resolve();
        };
      });
    },
    reply: async ({ content }: { content: string }) => {
      calls.push(`reply: ${content}`);
      interaction.replied = true;
    },
    editReply: async ({ content }: { content: string }) => {
      calls.push(`edit: ${content}`);
      interaction.replied = true;
    },
  };
  return { interaction, calls, settle: () => settle(), as: interaction as unknown as RepliableInteraction };
}

describe('acknowledgeEphemeral', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('an answer ready before the deadline is the one reply: no deferral', async () => {
    const i = fakeInteraction();
    const reply = acknowledgeEphemeral(i.as, silentLogger);
    await vi.advanceTimersByTimeAsync(DEFER_AFTER_MS - 1);
    await reply('Speaking now.');
    await vi.advanceTimersByTimeAsync(10 * DEFER_AFTER_MS);
    expect(i.calls).toEqual(['reply: Speaking now.']);
  });

  it('no answer by the deadline: deferred then, and the answer edits the deferral', async () => {
    const i = fakeInteraction();
    const reply = acknowledgeEphemeral(i.as, silentLogger);
    await vi.advanceTimersByTimeAsync(DEFER_AFTER_MS - 1);
    expect(i.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(i.calls).toEqual(['defer']);
    i.settle();
    await reply('Done.');
    expect(i.calls).toEqual(['defer', 'edit: Done.']);
  });

  it('an answer while the deferral is on its way waits for it, then edits', async () => {
    const i = fakeInteraction();
    const reply = acknowledgeEphemeral(i.as, silentLogger);
    await vi.advanceTimersByTimeAsync(DEFER_AFTER_MS);
    const answered = reply('Done.');
    await vi.advanceTimersByTimeAsync(0);
    expect(i.calls).toEqual(['defer']);
    i.settle();
    await answered;
    expect(i.calls).toEqual(['defer', 'edit: Done.']);
  });

  it('counts from the interaction’s creation: one that waited 1.2 s before it was handled is deferred 0.3 s later', async () => {
    const i = fakeInteraction(Date.now() - 1_200);
    acknowledgeEphemeral(i.as, silentLogger);
    await vi.advanceTimersByTimeAsync(DEFER_AFTER_MS - 1_200 - 1);
    expect(i.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(i.calls).toEqual(['defer']);
  });

  it('an interaction already past the deadline is deferred at once; one stamped in the future, at the deadline', async () => {
    const late = fakeInteraction(Date.now() - 5_000);
    acknowledgeEphemeral(late.as, silentLogger);
    const skewed = fakeInteraction(Date.now() + 60_000);
    acknowledgeEphemeral(skewed.as, silentLogger);
    await vi.advanceTimersByTimeAsync(0);
    expect(late.calls).toEqual(['defer']);
    expect(skewed.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(DEFER_AFTER_MS);
    expect(skewed.calls).toEqual(['defer']);
  });

  it('a command that failed and was answered by the interaction handler is not deferred afterwards', async () => {
    const i = fakeInteraction();
    acknowledgeEphemeral(i.as, silentLogger);
    await i.interaction.reply({ content: 'Something went wrong.' });
    await vi.advanceTimersByTimeAsync(10 * DEFER_AFTER_MS);
    expect(i.calls).toEqual(['reply: Something went wrong.']);
  });

  it('a deferral Discord refuses is logged, unless the interaction expired (the answer after it is reported once)', async () => {
    const apiError = (code: number, message: string) =>
      new DiscordAPIError({ code, message }, code, 404, 'POST', 'https://discord.test/interactions', {
        body: {},
      });
    const logged: { level: string; msg: string }[] = [];
    const logger = createLogger({ level: 'debug', write: (line) => logged.push(JSON.parse(line)) });
    for (const error of [apiError(10062, 'Unknown interaction'), apiError(50001, 'Missing Access')]) {
      const i = fakeInteraction();
      i.interaction.deferReply = () => Promise.reject(error);
      acknowledgeEphemeral(i.as, logger);
      await vi.advanceTimersByTimeAsync(DEFER_AFTER_MS);
    }
    expect(logged.map((line) => line.msg)).toEqual(['could not acknowledge an interaction']);
    expect(isExpiredInteraction(apiError(10062, 'Unknown interaction'))).toBe(true);
    expect(isExpiredInteraction(apiError(10015, 'Unknown Webhook'))).toBe(false);
    expect(isExpiredInteraction(new Error('Unknown interaction'))).toBe(false);
  });
});
