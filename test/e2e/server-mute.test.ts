import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorld, type World } from './harness.ts';

// A moderator server-mutes Herald mid-queue: nobody would hear it, so nothing more is paid and nothing is dropped;
// the channel is told once why Herald is quiet, and once unmuted the rest is said in order.

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(async () => {
  await w?.close();
});

async function waitUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(done()).toBe(true);
}

const generations = () => w.tts.requests.filter((r) => r.method === 'POST');
const texts = () => generations().map((r) => (r.body as { text: string }).text);

describe('server mute', () => {
  it('pays nothing while Herald is muted, keeps the queue, and says the rest in order once unmuted', async () => {
    const voice = w.discord.voice(w.guild);
    voice.clear();
    const said = ['The first sentence, being said.', 'The second one, queued.', 'And the third, queued too.'];
    for (const text of said) await w.discord.slash(w.member, 'speak', { text });
    await voice.untilFrames(10);

    w.guild.serverMute(w.guild.bot, true);
    const notice = await w.discord.untilChannelMessage(w.text);
    expect(notice.content).toMatch(/server-muted me.*keeping the queue and spend nothing/);
    const paidWhenMuted = generations().length;
    // Long enough for the sentence being said to end and two more to have started, had Herald gone on.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(generations().length).toBe(paidWhenMuted);
    expect(paidWhenMuted).toBeLessThan(said.length);

    w.guild.serverMute(w.guild.bot, false);
    await voice.untilSilent({ quietMs: 1_000, timeoutMs: 20_000 });
    expect(texts()).toEqual(said);
    expect(w.discord.channelMessages(w.text).filter((m) => /server-muted/.test(m.content))).toHaveLength(1);
  });

  it('is still muted when it comes back (a server mute outlives leaving voice): nothing is paid on rejoining', async () => {
    const voice = w.discord.voice(w.guild);
    w.guild.serverMute(w.guild.bot, true);
    await w.discord.slash(w.member, 'leave', {});
    await waitUntil(() => w.guild.botVoiceChannelId() === null);
    const told = w.discord.channelMessages(w.text).filter((m) => /server-muted/.test(m.content)).length;
    const paid = generations().length;
    voice.clear();
    await w.discord.slash(w.member, 'speak', { text: 'Said on coming back muted.' });
    await w.discord.untilChannelMessage(w.text, { match: (m) => /server-muted me/.test(m.content) });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(generations().length).toBe(paid);
    expect(w.discord.channelMessages(w.text).filter((m) => /server-muted/.test(m.content))).toHaveLength(
      told + 1,
    );

    w.guild.serverMute(w.guild.bot, false);
    await voice.untilFrames(10);
    expect(texts().at(-1)).toBe('Said on coming back muted.');
  });
});
