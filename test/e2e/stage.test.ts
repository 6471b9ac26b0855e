import { PermissionFlagsBits } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorld, type World } from './harness.ts';

// On a stage everyone sits in the audience (suppressed) and nobody hears them. Herald, a stage moderator, takes the
// stage itself; otherwise it asks to speak, says a moderator must invite it, and pays nothing until invited.

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(async () => {
  await w?.close();
});

const generations = () => w.tts.requests.filter((r) => r.method === 'POST');
const texts = () => generations().map((r) => (r.body as { text: string }).text);
const VOICE = PermissionFlagsBits.ViewChannel | PermissionFlagsBits.Connect | PermissionFlagsBits.Speak;

describe('stage channels', () => {
  it('a stage moderator, Herald takes the stage and is heard', async () => {
    const stage = w.guild.addStageChannel('Town Hall');
    w.guild.setBotPermissions(VOICE | PermissionFlagsBits.MuteMembers, stage);
    w.guild.joinVoice(w.member, stage);
    const voice = w.discord.voice(w.guild);
    voice.clear();

    await w.discord.slash(w.member, 'speak', { text: 'Welcome to the town hall.' });
    await voice.untilSilent({ quietMs: 1_000, timeoutMs: 20_000 });
    const heard = voice.frames.filter((f) => !f.silence);
    expect(heard.length).toBeGreaterThan(10);
    expect(heard.every((f) => f.e2ee)).toBe(true);
    expect(texts()).toContain('Welcome to the town hall.');
    const own = w.discord.rest.filter((c) => c.method === 'PATCH' && c.path.endsWith('/voice-states/@me'));
    expect(own.map((c) => c.body)).toEqual([{ channel_id: stage.id, suppress: false }]);
    await w.discord.slash(w.member, 'leave');
  });

  it('not a moderator, it asks to speak, pays nothing, and speaks once invited', async () => {
    const stage = w.guild.addStageChannel('Open Mic');
    w.guild.setBotPermissions(VOICE | PermissionFlagsBits.RequestToSpeak, stage);
    w.guild.joinVoice(w.member, stage);
    const voice = w.discord.voice(w.guild);
    voice.clear();
    const before = generations().length;

    await w.discord.slash(w.member, 'speak', { text: 'May I have the floor?' });
    const notice = await w.discord.untilChannelMessage(w.text);
    expect(notice.content).toMatch(/a stage moderator must invite me/);
    const own = w.discord.rest.filter((c) => c.method === 'PATCH' && c.path.endsWith('/voice-states/@me'));
    expect(own.at(-1)?.body).toMatchObject({
      channel_id: stage.id,
      request_to_speak_timestamp: expect.any(String),
    });
    // Long enough for the sentence to have been paid for and said, had Herald gone on.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(generations().length).toBe(before);
    expect(voice.frames.filter((f) => !f.silence)).toHaveLength(0);

    w.guild.inviteToSpeak(w.guild.bot);
    await voice.untilFrames(10);
    await voice.untilSilent({ quietMs: 1_000, timeoutMs: 20_000 });
    expect(voice.frames.filter((f) => !f.silence).every((f) => f.e2ee)).toBe(true);
    expect(texts().filter((t) => t === 'May I have the floor?')).toHaveLength(1);
  });

  it('allowed neither to take the stage nor to ask, it says so and pays nothing', async () => {
    await w.discord.slash(w.member, 'leave');
    const stage = w.guild.addStageChannel('Closed Panel');
    w.guild.setBotPermissions(VOICE, stage);
    w.guild.joinVoice(w.member, stage);
    const before = generations().length;

    await w.discord.slash(w.member, 'speak', { text: 'Can anyone hear me?' });
    const notice = await w.discord.untilChannelMessage(w.text);
    expect(notice.content).toMatch(/could not ask to speak, so nobody can hear me/);
    const own = w.discord.rest.filter((c) => c.method === 'PATCH' && c.path.endsWith('/voice-states/@me'));
    expect(own.at(-1)?.status).toBe(403);
    expect(generations().length).toBe(before);
  });
});
