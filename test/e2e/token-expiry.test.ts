import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createWorld, type World } from './harness.ts';

// An interaction's token works for 15 minutes. A /speak that waited longer than that (a long queue) and then failed
// must still reach the member who asked: in the channel where they asked, since the follow-up is refused.

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(async () => {
  vi.useRealTimers();
  await w?.close();
});

describe('a /speak that fails after its interaction token expired', () => {
  it('tells the member in the channel where they asked, naming them without a ping', async () => {
    // The service answers late, and then with a refusal that is not retried.
    w.tts.inject({ kind: 'delay-headers', ms: 1_500 });
    w.tts.inject({
      kind: 'status',
      status: 400,
      body: { error: { code: 'bad_request', message: 'refused' } },
    });
    const reply = await w.discord.slash(w.member, 'speak', { text: 'Said after a very long wait.' });
    expect(reply.content).toMatch(/^Speaking now/);
    // 16 minutes pass (the test clock of Herald and the emulator alike) while the request is under way.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 16 * 60_000);

    const notice = await w.discord.untilChannelMessage(w.text, { timeoutMs: 15_000 });
    expect(notice.content).toMatch(/^Bob Member: I could not say “Said after a very long wait\.”/);
    expect(reply.followUps()).toEqual([]);
    expect(w.logs.join('\n')).not.toMatch(/unhandled rejection/);
  });
});
