import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SPEAKERS } from '../../emulators/tts/index.ts';
import { createWorld, type World, type WorldOptions } from './harness.ts';

// What members and admins ask for, end to end: the TTS emulator's request log shows what Herald sent (text,
// temperature) and paid for; the Discord emulator's capture shows what was heard.

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
    .map((r) => r.body as { text: string; temperature?: number });
const texts = (w: World) => generated(w).map((body) => body.text);

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Binds the world's text channel for auto-read and brings Herald into the lounge. */
async function readAloud(w: World): Promise<void> {
  await w.discord.slash(w.admin, 'autoread', { channel: w.text, enabled: true }, { subcommand: 'channel' });
  await w.discord.slash(w.member, 'join');
  await w.discord.voice(w.guild).untilConnected();
}

describe('the pronunciation dictionary', () => {
  it('applies to /speak and auto-read alike, before the length and cost; admins change it, everyone lists it', async () => {
    const w = await open();
    expect(
      (
        await w.discord.slash(
          w.member,
          'dictionary',
          { word: 'gg', spoken: 'good game' },
          { subcommand: 'add' },
        )
      ).content,
    ).toMatch(/Manage Server/);
    for (const [word, spoken] of [
      ['gg', 'good game'],
      ['Siobhan', 'shiv awn'],
      ['New York', 'the big apple'],
    ] as const) {
      const added = await w.discord.slash(w.admin, 'dictionary', { word, spoken }, { subcommand: 'add' });
      expect(added.content).toMatch(/I will say/);
    }
    const tooLong = await w.discord.slash(
      w.admin,
      'dictionary',
      { word: 'x'.repeat(101), spoken: 'y' },
      { subcommand: 'add' },
    );
    expect(tooLong.content).toBe('A word and its spoken form may have at most 100 characters each.');
    const list = await w.discord.slash(w.member, 'dictionary', {}, { subcommand: 'list' });
    expect(list.content).toContain('gg → good game');
    expect(list.content).toContain('3 of 500 words');

    const reply = await w.discord.slash(w.member, 'speak', { text: 'GG Siobhan, new york eggs' });
    const said = 'good game shiv awn, the big apple eggs';
    // The length (and so the estimate and the budget check) is the spoken text's.
    expect(reply.content).toMatch(`${said.length} characters`);
    await w.discord.voice(w.guild).untilSilent();
    expect(texts(w)).toEqual([said]);

    await readAloud(w);
    w.discord.sendMessage(w.member, w.text, 'gg everyone');
    await w.discord.voice(w.guild).untilSilent();
    expect(texts(w).at(-1)).toBe('Bob Member said, good game everyone');

    await w.discord.slash(w.admin, 'dictionary', { word: 'GG' }, { subcommand: 'remove' });
    w.discord.sendMessage(w.member, w.text, 'gg again');
    await w.discord.voice(w.guild).untilSilent();
    expect(texts(w).at(-1)).toMatch(/gg again$/);
  });
});

describe('temperature', () => {
  it('is sent to the service per member, falls back to the server default, and survives a restart', async () => {
    const w = await open();
    const mine = await w.discord.slash(w.member, 'voice-tune', { temperature: 1.5 });
    expect(mine.content).toBe('Your temperature is now 1.50.');
    expect(
      (await w.discord.slash(w.member, 'voice-tune', { temperature: 0.8, scope: 'server' })).content,
    ).toMatch(/Manage Server/);
    await w.discord.slash(w.admin, 'voice-tune', { temperature: 0.8, scope: 'server' });
    await w.restart();
    await w.discord.slash(w.member, 'speak', { text: 'Lively me.' });
    await w.discord.voice(w.guild).untilSilent();
    await w.discord.slash(w.admin, 'speak', { text: 'Server default.' });
    await w.discord.voice(w.guild).untilSilent();
    expect(generated(w).map((body) => body.temperature)).toEqual([1.5, 0.8]);
    const voices = await w.discord.slash(w.member, 'voices');
    expect(voices.content).toContain('Your temperature: 1.50');
  });

  it('is left out, with a note in /voices, on the variant form that has none', async () => {
    const w = await open({ tts: { form: 'variant' }, env: { TTS_API_FORM: 'variant' } });
    const tuned = await w.discord.slash(w.member, 'voice-tune', { temperature: 1.5 });
    expect(tuned.content).toMatch(/has no temperature, so it is stored but not used/);
    await w.discord.slash(w.member, 'speak', { text: 'Plain.' });
    await w.discord.voice(w.guild).untilSilent();
    expect(generated(w)).toHaveLength(1);
    expect(generated(w)[0]).not.toHaveProperty('temperature');
    expect((await w.discord.slash(w.member, 'voices')).content).toMatch(/has no temperature/);
  });
});

describe('voice preview', () => {
  it('is heard in the member’s voice channel, or attached as a file, and paid once per voice and temperature', async () => {
    const w = await open({ env: { AUDIO_CACHE_MB: '64' } });
    const first = await w.discord.slash(w.member, 'voices', { preview: 'Adam' });
    expect(first.content).toBe(`Previewing Adam in <#${w.lounge.id}>.`);
    let heard = await w.discord.voice(w.guild).untilSilent();
    expect(heard.segments[0]?.dominantHz).toBeCloseTo(adam?.toneHz ?? 0, -1);
    await waitUntil(() => w.logs.some((line) => line.includes('"outcome":"stored"')));

    await w.discord.slash(w.member, 'voices', { preview: 'Adam' });
    heard = await w.discord.voice(w.guild).untilSilent();
    expect(heard.segments[0]?.dominantHz).toBeCloseTo(adam?.toneHz ?? 0, -1);
    expect(texts(w)).toEqual(['Hello, I am Adam. This is how I sound.']);

    w.guild.leaveVoice(w.admin);
    w.guild.leaveVoice(w.member);
    await w.discord.voice(w.guild).untilDisconnected();
    const file = await w.discord.slash(w.member, 'voices', { preview: 'Adam' });
    expect(file.content).toMatch(/as a file because you are not in a voice channel/);
    expect(file.message.files).toEqual([
      expect.objectContaining({
        filename: 'preview-adam.ogg',
        size: expect.any(Number),
        contentType: 'audio/ogg',
      }),
    ]);
    expect(file.message.files[0]?.size).toBeGreaterThan(1_000);
    expect(texts(w)).toHaveLength(1); // served from the cache

    // Another temperature is another sound: paid once more.
    await w.discord.slash(w.member, 'voice-tune', { temperature: 1.7 });
    await w.discord.slash(w.member, 'voices', { preview: 'Adam' });
    expect(generated(w).map((body) => body.temperature)).toEqual([undefined, 1.7]);
  });
});

describe('the block list', () => {
  it('refuses a blocked member’s /speak, never reads their messages, and /unblock lifts it', async () => {
    const w = await open();
    await readAloud(w);
    expect(
      (await w.discord.slash(w.member, 'block', { user: w.admin }, { subcommand: 'user' })).content,
    ).toMatch(/Manage Server/);
    const blocked = await w.discord.slash(w.admin, 'block', { user: w.member }, { subcommand: 'user' });
    expect(blocked.content).toMatch(/^Blocked <@/);
    expect((await w.discord.slash(w.admin, 'block', {}, { subcommand: 'list' })).content).toContain(
      `<@${w.member.id}>`,
    );
    const refused = await w.discord.slash(w.member, 'speak', { text: 'let me talk' });
    expect(refused.content).toBe(
      'An admin of this server has blocked you from having Herald speak for you here.',
    );
    w.discord.sendMessage(w.member, w.text, 'blocked message');
    w.discord.sendMessage(w.admin, w.text, 'admin message');
    await w.discord.voice(w.guild).untilSilent();
    expect(texts(w)).toEqual(['Ada Admin said, admin message']);

    expect((await w.discord.slash(w.admin, 'unblock', { user: w.member })).content).toMatch(/^Unblocked/);
    expect((await w.discord.slash(w.member, 'speak', { text: 'free again' })).content).toMatch(
      /Speaking now|Queued/,
    );
    await w.discord.voice(w.guild).untilSilent();
    expect(texts(w).at(-1)).toBe('free again');
  });
});

describe('spoken names', () => {
  it('says the /nickname, else the server nickname, else the display name', async () => {
    const w = await open();
    const carl = w.guild.addMember({ name: 'Carl', nick: 'Carlito' });
    w.guild.joinVoice(carl, w.lounge);
    await readAloud(w);
    await w.discord.slash(w.admin, 'autoread', { 'author-window': 0 }, { subcommand: 'set' });
    w.discord.sendMessage(carl, w.text, 'one');
    await w.discord.voice(w.guild).untilSilent();
    expect(texts(w).at(-1)).toBe('Carlito said, one');

    expect(
      (await w.discord.slash(w.member, 'nickname', { name: 'Boss', member: w.admin }, { subcommand: 'set' }))
        .content,
    ).toMatch(/Manage Server/);
    expect(
      (await w.discord.slash(w.member, 'nickname', { name: 'Bobby' }, { subcommand: 'set' })).content,
    ).toBe('I will say your name as “Bobby”.');
    await w.discord.slash(
      w.admin,
      'nickname',
      { name: 'Carl the Great', member: carl },
      { subcommand: 'set' },
    );
    w.discord.sendMessage(w.member, w.text, 'two');
    w.discord.sendMessage(carl, w.text, 'three');
    await w.discord.voice(w.guild).untilSilent({ quietMs: 900 });
    expect(texts(w).slice(-2)).toEqual(['Bobby said, two', 'Carl the Great said, three']);

    await w.discord.slash(w.member, 'nickname', {}, { subcommand: 'clear' });
    w.discord.sendMessage(w.member, w.text, 'four');
    await w.discord.voice(w.guild).untilSilent();
    expect(texts(w).at(-1)).toBe('Bob Member said, four');
  });
});

describe('auto-join', () => {
  it('is off by default; when on, a message in a read channel brings Herald to the author and is read', async () => {
    const w = await open();
    await w.discord.slash(w.admin, 'autoread', { channel: w.text, enabled: true }, { subcommand: 'channel' });
    w.discord.sendMessage(w.member, w.text, 'nobody hears this');
    await waitUntil(() => w.logs.some((line) => line.includes('"reason":"herald-not-in-voice"')));
    await w.discord.slash(w.admin, 'autoread', { 'auto-join': true }, { subcommand: 'set' });
    expect(w.guild.botVoiceChannelId()).toBeNull();

    w.discord.sendMessage(w.member, w.text, 'come here');
    await w.discord.voice(w.guild).untilSilent();
    expect(w.guild.botVoiceChannelId()).toBe(w.lounge.id);
    expect(texts(w)).toEqual(['Bob Member said, come here']);

    // It still leaves when nobody is left to listen.
    w.guild.leaveVoice(w.admin);
    w.guild.leaveVoice(w.member);
    await w.discord.voice(w.guild).untilDisconnected();
    expect(w.guild.botVoiceChannelId()).toBeNull();
  });

  it('when on, a member joining a voice channel that is read brings Herald in', async () => {
    const w = await open();
    w.guild.leaveVoice(w.admin);
    w.guild.leaveVoice(w.member);
    await w.discord.slash(
      w.admin,
      'autoread',
      { channel: w.lounge, enabled: true },
      { subcommand: 'channel' },
    );
    const elsewhere = w.guild.addVoiceChannel('Elsewhere');
    w.guild.joinVoice(w.member, elsewhere);
    await w.discord.slash(w.admin, 'autoread', { 'auto-join': true }, { subcommand: 'set' });
    expect(w.guild.botVoiceChannelId()).toBeNull(); // Elsewhere is not read, and the setting was still off

    w.guild.joinVoice(w.member, w.lounge);
    await waitUntil(() => w.guild.botVoiceChannelId() === w.lounge.id);
    await w.discord.voice(w.guild).untilConnected();
    w.discord.sendMessage(w.member, w.lounge, 'hello from the voice chat');
    await w.discord.voice(w.guild).untilSilent();
    expect(texts(w)).toEqual(['Bob Member said, hello from the voice chat']);
  });
});
