import { PermissionFlagsBits } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import { IS_VOICE_MESSAGE } from '../../emulators/discord/index.ts';
import { DEFAULT_BOT_PERMISSIONS } from '../../emulators/discord/model.ts';
import { DEFAULT_SPEAKERS } from '../../emulators/tts/index.ts';
import { createWorld, type World, type WorldOptions } from './harness.ts';

// "Read aloud" (right-click a message → Apps), end to end: what the TTS emulator was asked to say and charged,
// what members heard (decrypted by their DAVE clients), and what the Discord emulator received.

const adam = DEFAULT_SPEAKERS[1];
let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});
async function open(options: WorldOptions = {}): Promise<World> {
  world = await createWorld(options);
  return world;
}
const generated = (w: World) =>
  w.tts.requests
    .filter((r) => r.path.endsWith('/speech/generate') && r.status === 200)
    .map((r) => (r.body as { text: string }).text);

describe('Read aloud', () => {
  it('says a message as auto-read would, in the author’s voice, heard under DAVE; twice is paid once', async () => {
    const w = await open({ env: { AUDIO_CACHE_MB: '16' } });
    const author = w.guild.addMember({ name: 'Dana Author' });
    await w.discord.slash(author, 'voice-set', { speaker: 'Adam', scope: 'me' });
    await w.discord.slash(w.admin, 'dictionary', { word: 'gg', spoken: 'good game' }, { subcommand: 'add' });
    const message = w.discord.sendMessage(
      author,
      w.text,
      `gg <@${w.member.id}>, see https://example.com/some/page 🎉`,
      { mentions: [w.member] },
    );

    const reply = await w.discord.messageCommand(w.member, message, 'Read aloud');
    expect(reply.ephemeral).toBe(true);
    expect(reply.content).toMatch(/^Speaking now as Adam · \d+ characters/);
    const heard = await w.discord.voice(w.guild).untilSilent();
    const said = 'Dana Author said, good game Bob Member, see a link party popper';
    expect(generated(w)).toEqual([said]);
    expect(heard.segments[0]?.dominantHz).toBeCloseTo(adam?.toneHz ?? 0, -1);
    // End-to-end encrypted, and every member in the channel decrypted every frame.
    expect(heard.hearing.sent).toBeGreaterThan(0);
    expect(heard.hearing.e2ee).toBe(heard.hearing.sent);
    for (const listener of [w.member, w.admin]) {
      expect(heard.hearing.listeners[listener.id]).toEqual({ decrypted: heard.hearing.sent, failed: {} });
    }
    await waitUntil(() => w.logs.some((line) => line.includes('"outcome":"stored"')));

    // The emulator hears silence a moment before Herald's player goes idle, so the second ask may queue behind
    // the end of the first.
    const again = await w.discord.messageCommand(w.admin, message, 'Read aloud');
    expect(again.content).toMatch(/^(Speaking now|Queued at position 2) as Adam/);
    const replay = await w.discord.voice(w.guild).untilSilent();
    expect(replay.segments[0]?.dominantHz).toBeCloseTo(adam?.toneHz ?? 0, -1);
    expect(generated(w)).toEqual([said]);
    expect(w.tts.requests.filter((r) => r.chargedUsd > 0)).toHaveLength(1);
  });

  it('refuses a blocked author’s message, and offers a voice message to a member not in voice', async () => {
    const w = await open();
    w.guild.setBotPermissions(DEFAULT_BOT_PERMISSIONS | PermissionFlagsBits.SendVoiceMessages);
    const author = w.guild.addMember({ name: 'Eve Blocked' });
    const stranger = w.guild.addMember({ name: 'Cleo Elsewhere' });
    const blocked = w.discord.sendMessage(author, w.text, 'Please read me.');
    await w.discord.slash(w.admin, 'block', { user: author }, { subcommand: 'user' });
    const refused = await w.discord.messageCommand(w.member, blocked, 'Read aloud');
    expect(refused.content).toBe(
      'An admin of this server has blocked that message’s author from having Herald speak for them here.',
    );

    const message = w.discord.sendMessage(w.member, w.text, 'Hear me later.');
    const offer = await w.discord.messageCommand(stranger, message, 'Read aloud');
    expect(offer.content).toBe('Join a voice channel to hear it there, or have it here as a voice message.');
    expect(generated(w)).toEqual([]);
    const pressed = await w.discord.press(stranger, offer.message, `Read aloud:voice-message:${message.id}`);
    expect(pressed.ephemeral).toBe(true);
    const done = pressed.edits[0] ?? (await pressed.untilEdited());
    expect(done.content).toMatch(/^Sent a voice message as \w+ · 31 characters/);
    const [voiceMessage] = pressed.followUps().map((f) => f.message);
    expect((voiceMessage?.flags ?? 0) & IS_VOICE_MESSAGE).toBe(IS_VOICE_MESSAGE);
    expect(voiceMessage?.channelId).toBe(w.text.id);
    expect(generated(w)).toEqual(['Bob Member said, Hear me later.']);
    expect(w.guild.botVoiceChannelId()).toBeNull();
  });
});

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
