import { DatabaseSync } from 'node:sqlite';
import { PermissionFlagsBits } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import { IS_VOICE_MESSAGE, type Reply, type SentMessage } from '../../emulators/discord/index.ts';
import { DEFAULT_BOT_PERMISSIONS, DEFAULT_EVERYONE_PERMISSIONS } from '../../emulators/discord/model.ts';
import { DEFAULT_SPEAKERS, expectedDurationMs } from '../../emulators/tts/index.ts';
import type { EmulatedSpeaker } from '../../emulators/tts/speakers.ts';
import { MISSING_VOICE_MESSAGE_PERMISSION, waveformPoints } from '../../src/voice-message/index.ts';
import { createWorld, type World, type WorldOptions } from './harness.ts';

// Speech as a Discord voice message, end to end: the Discord emulator holds the uploaded bytes and metadata and
// refuses what Discord refuses; the TTS emulator's log is what was paid for.

// A tone of 0 Hz is silence: a voice that says nothing.
const SILENT: EmulatedSpeaker = {
  id: '0b6c3a1e-5f1d-4c59-9d7e-000000000000',
  name: 'Hush',
  voiceKey: 'hush',
  gender: null,
  languages: null,
  toneHz: 0,
};
const VOICE_MESSAGES = DEFAULT_BOT_PERMISSIONS | PermissionFlagsBits.SendVoiceMessages;
const TEN = 'abcdefghij'; // 10 characters: $0.01 at $0.001 a character
const PRICE = { pricePerCharUsd: 0.001, msPerChar: 40 };

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});
async function open(options: WorldOptions = {}): Promise<World> {
  world = await createWorld(options);
  return world;
}
const generated = (w: World) => w.tts.requests.filter((r) => r.path.endsWith('/speech/generate'));
const paid = (w: World) => generated(w).filter((r) => r.chargedUsd > 0);

/** The answer's final edit (the first answer says the message is being made). */
async function outcome(reply: Reply): Promise<string> {
  if (!/^Recording a voice message/.test(reply.content)) return reply.content;
  return (reply.edits[0] ?? (await reply.untilEdited())).content;
}

/** The voice messages among an interaction's follow-ups. */
const voiceMessages = (reply: Reply): SentMessage[] =>
  reply
    .followUps()
    .map((f) => f.message)
    .filter((m) => (m.flags & IS_VOICE_MESSAGE) !== 0);

/** The TTS service's body for a request Herald made, asked again (the emulator's audio is the same each time). */
async function serviceBody(w: World, request: ReturnType<typeof generated>[number]): Promise<Buffer> {
  const headers = Object.fromEntries(
    Object.entries(request.headers).filter(
      ([name]) => !['host', 'content-length', 'connection'].includes(name),
    ),
  );
  const url = new URL(w.tts.baseUrl);
  const response = await fetch(`${url.origin}${request.path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(request.body),
  });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

describe('/speak as a voice message', () => {
  it('posts the service’s Ogg Opus as it is, with its length and a waveform of speech, or of silence', async () => {
    const w = await open({ tts: { speakers: [...DEFAULT_SPEAKERS, SILENT] } });
    w.guild.setBotPermissions(VOICE_MESSAGES);
    const stranger = w.guild.addMember({ name: 'Cleo Elsewhere' });
    const offer = await w.discord.slash(stranger, 'speak', { text: 'hello' });
    expect(offer.content).toMatch(/Join a voice channel first.*voice-message:True/);

    const text = 'A voice message from nowhere, with a pause, then more.';
    const reply = await w.discord.slash(stranger, 'speak', { text, 'voice-message': true });
    expect(reply.ephemeral).toBe(true);
    expect(await outcome(reply)).toMatch(
      /^Sent a voice message as \w+ · 54 characters · 2\.2 s · \$0\.0054\.$/,
    );
    // One message, and only that: no other follow-up, nothing posted in the channel.
    expect(reply.followUps()).toHaveLength(1);
    expect(w.discord.channelMessages(w.text)).toEqual([]);
    const [message] = voiceMessages(reply);
    expect(message?.content).toBe('');
    expect(message?.embeds).toEqual([]);
    expect(message?.files).toHaveLength(1);
    const file = message?.files[0];
    expect(file?.contentType).toBe('audio/ogg');
    expect(file?.filename).toBe('voice-message.ogg');
    const [request] = paid(w);
    expect(request).toBeDefined();
    if (!request || !file) return;
    expect(file.data.equals(await serviceBody(w, request))).toBe(true);
    const lengthMs = expectedDurationMs(text, PRICE);
    expect(Math.abs((file.durationSecs ?? 0) * 1000 - lengthMs)).toBeLessThanOrEqual(50);
    const points = [...Buffer.from(file.waveform ?? '', 'base64')];
    expect(points).toHaveLength(waveformPoints(lengthMs / 1000));
    // The emulator's "speech" is a tone at 0.3 of full scale: loud (not flat at 0) all along.
    expect(Math.min(...points.slice(0, -1))).toBeGreaterThan(40);

    const hushed = await w.discord.slash(stranger, 'speak', {
      text: 'Nothing to hear here.',
      speaker: 'Hush',
      'voice-message': true,
    });
    expect(await outcome(hushed)).toMatch(/^Sent a voice message as Hush/);
    const silent = voiceMessages(hushed)[0]?.files[0];
    const flat = [...Buffer.from(silent?.waveform ?? '', 'base64')];
    expect(flat).toHaveLength(waveformPoints(expectedDurationMs('Nothing to hear here.', PRICE) / 1000));
    expect(new Set(flat)).toEqual(new Set([0]));
    // Nothing was played in voice: Herald never joined.
    expect(w.guild.botVoiceChannelId()).toBeNull();
  });

  it('without Send Voice Messages: a clear answer, and nothing asked of the service nor charged', async () => {
    const w = await open();
    const reply = await w.discord.slash(w.member, 'speak', {
      text: 'Not allowed here.',
      'voice-message': true,
    });
    expect(reply.content).toBe(MISSING_VOICE_MESSAGE_PERMISSION);
    expect(reply.followUps()).toEqual([]);
    expect(generated(w)).toEqual([]);
    expect(w.tts.totalChargedUsd()).toBe(0);
    // Discord itself refuses one (50173), so a bot that did not ask first would have paid for nothing.
    const refused = w.discord.rest.filter((call) => call.status === 403);
    expect(refused).toEqual([]);
  });

  it('at the floor is refused as /speak is, and a cached one is still delivered, for free', async () => {
    const w = await open({
      tts: { balanceUsd: 0.525, ...PRICE },
      env: { BUDGET_FLOOR_USD: '0.50', AUDIO_CACHE_MB: '16' },
    });
    w.guild.setBotPermissions(VOICE_MESSAGES);
    const first = await w.discord.slash(w.member, 'speak', { text: TEN, 'voice-message': true });
    expect(await outcome(first)).toMatch(/^Sent a voice message/);
    await waitUntil(() => w.logs.some((line) => line.includes('"outcome":"stored"')));
    const second = await w.discord.slash(w.member, 'speak', { text: 'klmnopqrst', 'voice-message': true });
    expect(await outcome(second)).toMatch(/^Sent a voice message/);
    // 0.525 → 0.515 → 0.505: a third would cross the floor.
    const refused = await w.discord.slash(w.member, 'speak', { text: 'uvwxyzabcd', 'voice-message': true });
    const sentence = await outcome(refused);
    expect(sentence).toMatch(/^Herald can’t say this: .* below the floor the operator set \(\$0\.50\)/);
    expect(voiceMessages(refused)).toEqual([]);
    const spoken = await w.discord.slash(w.member, 'speak', { text: 'uvwxyzabcd' });
    expect(spoken.content).toBe(sentence);

    const charged = w.tts.totalChargedUsd();
    const cached = await w.discord.slash(w.member, 'speak', { text: TEN, 'voice-message': true });
    expect(await outcome(cached)).toMatch(/^Sent a voice message .* · from the cache, free\.$/);
    expect(
      voiceMessages(cached)[0]?.files[0]?.data.equals(
        voiceMessages(first)[0]?.files[0]?.data ?? Buffer.alloc(0),
      ),
    ).toBe(true);
    expect(w.tts.totalChargedUsd()).toBe(charged);
    expect(w.tts.balanceUsd).toBeCloseTo(0.505, 6);
  });
});

describe('Herald installed to a member’s account', () => {
  it('with USER_INSTALL=on, sends a DM voice message counted against the member’s daily limit', async () => {
    const w = await open({
      tts: PRICE,
      env: { USER_INSTALL: 'on', USER_INSTALL_CHARS_PER_DAY: '25', BUDGET_PRICE_PER_CHAR_USD: '0.001' },
    });
    const dm = { dm: 'bot' as const };
    // The speaker option autocompletes there too.
    const choices = await w.discord.userInstalledAutocomplete(
      w.member,
      'speak',
      { speaker: 'Ad' },
      'speaker',
      dm,
    );
    expect(choices.map((choice) => choice.name)).toEqual(['Adam (male)']);
    const first = await w.discord.userInstalledSlash(w.member, 'speak', { text: TEN }, dm);
    expect(await outcome(first)).toMatch(/^Sent a voice message as \w+ · 10 characters/);
    const [message] = voiceMessages(first);
    expect(message?.files[0]?.contentType).toBe('audio/ogg');
    const second = await w.discord.userInstalledSlash(w.member, 'speak', { text: 'klmnopqrst' }, dm);
    expect(await outcome(second)).toMatch(/^Sent a voice message/);
    // 20 of 25 used: ten more do not fit, and nothing is paid for them.
    const before = paid(w).length;
    const third = await w.discord.userInstalledSlash(w.member, 'speak', { text: 'uvwxyzabcd' }, dm);
    expect(third.content).toBe(
      'You have used 20 of your 25 characters of voice messages today (UTC); this one needs 10. Try a shorter one, or again tomorrow.',
    );
    expect(paid(w).length).toBe(before);
    // The same budget and ledger as every other generation, under its own name in place of a server's.
    const db = new DatabaseSync(w.databasePath, { readOnly: true });
    try {
      const rows = db.prepare('SELECT guild_id, user_id, characters FROM budget_ledger').all();
      expect(rows).toEqual([
        { guild_id: 'user-install', user_id: w.member.id, characters: 10 },
        { guild_id: 'user-install', user_id: w.member.id, characters: 10 },
      ]);
    } finally {
      db.close();
    }
  });

  it('sends one in a server Herald was never added to, with the permissions everyone has there', async () => {
    const w = await open({ env: { USER_INSTALL: 'on' } });
    const elsewhere = w.discord.createGuild({ name: 'Elsewhere' });
    const chat = elsewhere.addTextChannel('chat');
    const fay = elsewhere.addMember({ name: 'Fay Visitor' });
    elsewhere.removeBot();
    await waitUntil(() => !w.herald().client.guilds.cache.has(elsewhere.id));
    const refused = await w.discord.userInstalledSlash(fay, 'speak', { text: TEN }, { channel: chat });
    expect(refused.content).toBe(MISSING_VOICE_MESSAGE_PERMISSION);
    const allowed = DEFAULT_EVERYONE_PERMISSIONS | PermissionFlagsBits.SendVoiceMessages;
    const reply = await w.discord.userInstalledSlash(
      fay,
      'speak',
      { text: TEN },
      { channel: chat },
      { appPermissions: allowed },
    );
    expect(await outcome(reply)).toMatch(/^Sent a voice message as \w+ · 10 characters/);
    const [message] = voiceMessages(reply);
    expect(message?.channelId).toBe(chat.id);
    expect(message?.files[0]?.durationSecs).toBeGreaterThan(0);
  });

  it('with USER_INSTALL off, says so instead of speaking', async () => {
    const w = await open();
    const reply = await w.discord.userInstalledSlash(w.member, 'speak', { text: TEN }, { dm: 'bot' });
    expect(reply.content).toMatch(/has not enabled it as an app installed to your account/);
    expect(
      await w.discord.userInstalledAutocomplete(w.member, 'speak', { speaker: 'Ad' }, 'speaker', {
        dm: 'bot',
      }),
    ).toEqual([]);
    expect(generated(w)).toEqual([]);
  });
});

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
