import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createWorld, type World } from './harness.ts';

// The server's AFK channel is where Discord parks idle members and where nobody speaks: Herald never joins it, and
// says why, before anything is paid.

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(async () => {
  await w?.close();
});

describe('the AFK channel', () => {
  it('/speak from a member in it is refused with a sentence, nothing charged; /join too', async () => {
    const afk = w.guild.addVoiceChannel('AFK');
    w.guild.setAfkChannel(afk);
    await vi.waitFor(() => expect(w.herald().client.guilds.cache.get(w.guild.id)?.afkChannelId).toBe(afk.id));
    w.guild.joinVoice(w.member, afk);
    // Generations (the voice list may be fetched to resolve the speaker: that costs nothing).
    const generations = () => w.tts.requests.filter((r) => r.method === 'POST').length;
    const before = generations();

    const spoken = await w.discord.slash(w.member, 'speak', { text: 'Anyone here?' });
    expect(spoken.content).toMatch(/AFK channel, where nobody speaks/);
    const joined = await w.discord.slash(w.member, 'join');
    expect(joined.content).toMatch(/AFK channel, where nobody speaks/);
    expect(generations()).toBe(before);
    expect(w.guild.botVoiceChannelId()).toBeNull();

    // Anywhere else in the server, as ever.
    w.guild.joinVoice(w.member, w.lounge);
    expect((await w.discord.slash(w.member, 'speak', { text: 'Here then.' })).content).toMatch(
      /^Speaking now/,
    );
    await w.discord.voice(w.guild).untilSilent();
  });
});
