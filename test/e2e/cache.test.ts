import { readdirSync, statSync, truncateSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SPEAKERS, expectedDurationMs } from '../../emulators/tts/index.ts';
import { createWorld, type World, type WorldOptions } from './harness.ts';

// The audio cache end to end: the TTS emulator's request log is what was paid for; the Discord emulator's capture
// is what members heard.

const bella = DEFAULT_SPEAKERS[0];
const PRICE = { pricePerCharUsd: 0.001 };
let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});
async function open(options: WorldOptions = {}): Promise<World> {
  world = await createWorld({
    tts: { ...PRICE, ...options.tts },
    // The harness turns the cache off for every other test; here it is the subject.
    env: { AUDIO_CACHE_MB: '256', ...options.env },
  });
  return world;
}
const generations = (w: World) =>
  w.tts.requests.filter((r) => r.path.endsWith('/speech/generate') && r.chargedUsd > 0);
const cacheDir = (w: World) =>
  join(dirname((w.env.DATABASE_URL ?? '').replace(/^sqlite:/, '')), 'audio-cache');
const texts = (w: World) => generations(w).map((r) => (r.body as { text: string }).text);
const folderBytes = (w: World) =>
  readdirSync(cacheDir(w)).reduce(
    (sum, name) => sum + (statSync(join(cacheDir(w), name), { throwIfNoEntry: false })?.size ?? 0),
    0,
  );
const cacheFiles = (w: World) => readdirSync(cacheDir(w)).filter((name) => name.endsWith('.hac'));

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Says `text` with /speak and returns what was heard. */
async function speak(w: World, text: string) {
  const reply = await w.discord.slash(w.member, 'speak', { text });
  expect(reply.content).toMatch(/Speaking now|Queued/);
  return w.discord.voice(w.guild).untilSilent({ quietMs: 400 });
}

function expectWhole(heard: Awaited<ReturnType<typeof speak>>, text: string): void {
  // A loaded machine can split one utterance into two segments; the pitch and the total sound are what count.
  expect(heard.segments.length).toBeGreaterThanOrEqual(1);
  for (const segment of heard.segments) expect(segment.dominantHz).toBeCloseTo(bella?.toneHz ?? 0, -1);
  expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(text) - 60);
  expect(heard.soundMs).toBeLessThan(expectedDurationMs(text) + 60);
}

describe('the audio cache', () => {
  it('pays for the same sentence once; both times it is heard whole; /budget show counts the saving', async () => {
    const w = await open();
    const text = 'Good game, well played.';
    expectWhole(await speak(w, text), text);
    await waitUntil(() => cacheFiles(w).length === 1);
    expectWhole(await speak(w, text), text);
    expect(generations(w)).toHaveLength(1);
    // The file's name says nothing of the text.
    expect(cacheFiles(w)[0]).toMatch(/^[0-9a-f]{64}\.hac$/);

    const show = await w.discord.slash(w.admin, 'budget', {}, { subcommand: 'show' });
    expect(show.content).toContain('**Audio cache** · on for this server');
    expect(show.content).toContain(`Saved today: 1 hit · ${text.length} characters · $0.023 not spent`);
    expect(show.content).toContain(`Saved in total: 1 hit · ${text.length} characters`);
  });

  it('caches the variant form’s WAV the same way', async () => {
    const w = await open({ tts: { form: 'variant' }, env: { TTS_API_FORM: 'variant' } });
    const text = 'Waves of audio.';
    expectWhole(await speak(w, text), text);
    await waitUntil(() => cacheFiles(w).length === 1);
    expectWhole(await speak(w, text), text);
    expect(generations(w)).toHaveLength(1);
  });

  it('charges once for twenty concurrent identical requests from twenty servers, and every server hears it', async () => {
    const w = await open();
    const servers = Array.from({ length: 20 }, (_, i) => {
      const guild = w.discord.createGuild({ name: `Server ${i}` });
      const text = guild.addTextChannel('chat');
      const room = guild.addVoiceChannel('Room');
      const member = guild.addMember({ name: `Member ${i}` });
      guild.joinVoice(member, room);
      return { guild, member, text };
    });
    await waitUntil(() => servers.every(({ guild }) => w.herald().client.guilds.cache.has(guild.id)));
    const replies = await Promise.all(
      servers.map(({ member, text }) => w.discord.slash(member, 'speak', { text: 'brb' }, { channel: text })),
    );
    // Twenty joins at once are a burst (more than the handshakes allowed in flight): some are told "Joining".
    expect(replies.every((reply) => /^(Speaking now|Joining your channel)/.test(reply.content))).toBe(true);
    const heard = await Promise.all(servers.map(({ guild }) => w.discord.voice(guild).untilSilent()));
    // Every server heard the sentence; how long exactly is the other tests' business (twenty DAVE handshakes at
    // once on a loaded machine can cost a server its first frames).
    expect(heard.every((h) => h.segments.length >= 1 && h.soundMs > 0)).toBe(true);
    console.log(
      `20 servers: shortest heard ${Math.min(...heard.map((h) => h.soundMs)).toFixed(0)} ms of sound`,
    );
    expect(generations(w)).toHaveLength(1);
    expect(w.tts.totalChargedUsd()).toBeCloseTo(0.003, 9);
  });

  it('regenerates a truncated cache file instead of playing it', async () => {
    const w = await open();
    const text = 'This one gets damaged on disk.';
    expectWhole(await speak(w, text), text);
    await waitUntil(() => cacheFiles(w).length === 1);
    const [name] = cacheFiles(w);
    truncateSync(join(cacheDir(w), name ?? ''), 600);
    expectWhole(await speak(w, text), text);
    expect(generations(w)).toHaveLength(2);
    expect(w.logs.some((line) => line.includes('a damaged audio cache file was deleted'))).toBe(true);
    // Stored again, whole: the third time is free.
    await waitUntil(() => cacheFiles(w).length === 1);
    expectWhole(await speak(w, text), text);
    expect(generations(w)).toHaveLength(2);
  });

  it('evicts the least recently used when full, never holding more than AUDIO_CACHE_MB on disk', async () => {
    const w = await open();
    // Same length, same voice: files of about the same size.
    const [a, b, c] = ['Sentence number one.', 'Sentence number two.', 'Sentence number six.'] as const;
    await speak(w, a);
    await waitUntil(() => cacheFiles(w).length === 1);
    const size = folderBytes(w);
    // Room for two entries, not three.
    const bound = Math.floor(size * 2.5);
    await w.restart({ AUDIO_CACHE_MB: String(bound / (1024 * 1024)) });
    await speak(w, b);
    await waitUntil(() => cacheFiles(w).length === 2);
    expect(folderBytes(w)).toBeLessThanOrEqual(bound);
    await speak(w, a); // a is now the most recently used; b the least
    await speak(w, c);
    await waitUntil(() => generations(w).length === 3 && cacheFiles(w).length === 2);
    expect(folderBytes(w)).toBeLessThanOrEqual(bound);
    expect(texts(w)).toEqual([a, b, c]);
    await speak(w, a);
    await speak(w, c);
    expect(texts(w)).toEqual([a, b, c]); // both still cached
    await speak(w, b);
    expect(texts(w)).toEqual([a, b, c, b]); // b was evicted, so it is paid again
    expect(folderBytes(w)).toBeLessThanOrEqual(bound);
  });

  it('charges every request when the operator turned the cache off', async () => {
    const w = await open({ env: { AUDIO_CACHE_MB: '0' } });
    for (let i = 0; i < 3; i++) await speak(w, 'hello');
    expect(generations(w)).toHaveLength(3);
  });

  it('charges every request of a server that turned caching of its speech off', async () => {
    const w = await open();
    const off = await w.discord.slash(w.admin, 'budget', { enabled: false }, { subcommand: 'cache' });
    expect(off.content).toMatch(/no longer stores this server’s speech/);
    for (let i = 0; i < 3; i++) await speak(w, 'hello');
    expect(generations(w)).toHaveLength(3);
    expect(cacheFiles(w)).toEqual([]);
  });
});
