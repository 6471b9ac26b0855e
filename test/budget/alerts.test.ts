import { describe, expect, it } from 'vitest';
import { type BudgetAlert, createBudgetAlerter, describeAlert } from '../../src/budget/index.ts';
import { silentLogger } from '../../src/log.ts';

/** Lets the alerter read the server channels and send. */
const flush = () => new Promise((resolve) => setImmediate(resolve));

const WARN: BudgetAlert = { kind: 'warn', balanceUsd: 0.99, warnUsd: 1, floorUsd: 0.5 };

function alerter(alertChannelId: string | undefined, serverChannels: string[], failOn?: string) {
  const sent: [string, string][] = [];
  const notify = createBudgetAlerter({
    store: { alertChannels: async () => serverChannels },
    alertChannelId,
    send: async (channelId, content) => {
      if (channelId === failOn) throw new Error('missing access');
      sent.push([channelId, content]);
    },
    logger: silentLogger,
  });
  return { notify, sent };
}

describe('budget alerts', () => {
  it('go only to the operator’s channel when one is configured', async () => {
    const { notify, sent } = alerter('1', ['2', '3']);
    notify(WARN);
    await flush();
    expect(sent).toEqual([['1', describeAlert(WARN)]]);
  });

  it('otherwise go to every server’s alert channel, one failure not stopping the others', async () => {
    const { notify, sent } = alerter(undefined, ['2', '3', '4'], '3');
    notify(WARN);
    await flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.map(([channel]) => channel)).toEqual(['2', '4']);
  });

  it('otherwise go nowhere but the log', async () => {
    const { notify, sent } = alerter(undefined, []);
    notify(WARN);
    await flush();
    expect(sent).toEqual([]);
  });

  it.each([
    [
      WARN,
      'running low: the account balance is $0.99 (warning level $1.00); Herald stops speaking at $0.50.',
    ],
    [
      { kind: 'blocked', reason: 'floor-reached', balanceUsd: 0.5, floorUsd: 0.5 } as const,
      'the account balance ($0.50) has reached the floor ($0.50)',
    ],
    [
      { kind: 'blocked', reason: 'service-refused', balanceUsd: undefined, floorUsd: 0.5 } as const,
      'refused a request for lack of credit. Herald checks again by itself',
    ],
    [
      { kind: 'resumed', balanceUsd: 3, floorUsd: 0.5 } as const,
      'Herald speaks again: the account balance is $3.00',
    ],
  ])('describeAlert(%o)', async (alert, text) => {
    expect(describeAlert(alert)).toContain(text);
  });
});
