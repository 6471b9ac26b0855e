import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_SPEAKERS, expectedDurationMs } from '../../emulators/tts/index.ts';
import { createWorld, type World } from './harness.ts';

// Auto-read end to end: messages in a bound channel, read aloud while Herald is in voice.

let world: World;
let spokenBefore = 0;
const generated = () =>
  world.tts.requests
    .filter((request) => request.path.endsWith('/speech/generate') && request.status === 200)
    .map((request) => (request.body as { text: string }).text);
const newlySpoken = () => generated().slice(spokenBefore);

beforeAll(async () => {
  world = await createWorld();
  const bind = await world.discord.slash(
    world.admin,
    'autoread',
    { channel: world.text, enabled: true },
    { subcommand: 'channel' },
  );
  expect(bind.ephemeral).toBe(true);
  await world.discord.slash(world.member, 'join');
  await world.discord.voice(world.guild).untilConnected();
});
afterAll(async () => {
  await world?.close();
});
beforeEach(() => {
  spokenBefore = generated().length;
  world.discord.voice(world.guild).clear();
});

describe('auto-read', () => {
  it('reads a message in the bound channel, announced with the author, as long as its text implies', async () => {
    world.discord.sendMessage(
      world.member,
      world.text,
      'Hello **from** the bound channel https://example.com/x',
    );
    const heard = await world.discord.voice(world.guild).untilSilent();
    expect(newlySpoken()).toEqual(['Bob Member said, Hello from the bound channel a link']);
    const expected = expectedDurationMs(newlySpoken()[0] ?? '');
    expect(heard.segments).toHaveLength(1);
    expect(heard.soundMs).toBeGreaterThan(expected - 60);
    expect(heard.soundMs).toBeLessThan(expected + 60);
    expect(heard.segments[0]?.dominantHz).toBeCloseTo(DEFAULT_SPEAKERS[0]?.toneHz ?? 0, -1);
  });

  it('does not read other channels, bots, webhooks, the prefix, silent messages or opted-out members', async () => {
    const elsewhere = world.guild.addTextChannel('random');
    world.discord.sendMessage(world.member, elsewhere, 'other channel');
    world.discord.sendMessage(world.member, world.text, 'from a bot', { bot: true });
    world.discord.sendMessage(world.member, world.text, 'from a webhook', { webhook: true });
    world.discord.sendMessage(world.member, world.text, '!ignored command');
    world.discord.sendMessage(world.member, world.text, 'hush', { silent: true });
    const optOut = await world.discord.slash(
      world.admin,
      'autoread',
      { enabled: false },
      { subcommand: 'me' },
    );
    expect(optOut.ephemeral).toBe(true);
    world.discord.sendMessage(world.admin, world.text, 'opted out admin');
    // A message that is read afterwards proves the earlier ones were considered and dropped, in order.
    world.discord.sendMessage(world.member, world.text, 'the only one');
    await world.discord.voice(world.guild).untilSilent();
    expect(newlySpoken()).toEqual([expect.stringMatching(/the only one$/)]);
    await world.discord.slash(world.admin, 'autoread', { enabled: true }, { subcommand: 'me' });
  });

  it('plays five quick messages in the order they arrived', async () => {
    const words = ['one', 'one two', 'one two three', 'one two three four', 'one two three four five'];
    for (const text of words) world.discord.sendMessage(world.member, world.text, text);
    const heard = await world.discord.voice(world.guild).untilSilent({ quietMs: 900 });
    expect(newlySpoken().map((text) => text.replace(/^Bob Member said, /, ''))).toEqual(words);
    // Each message is longer than the one before: the heard segments must grow in that order.
    expect(heard.segments).toHaveLength(5);
    const lengths = heard.segments.map((segment) => segment.durationMs);
    for (let i = 1; i < lengths.length; i++) expect(lengths[i]).toBeGreaterThan(lengths[i - 1] ?? 0);
    console.log(`auto-read gaps: ${heard.gapsMs.map((gap) => `${gap.toFixed(0)} ms`).join(', ')}`);
  });

  it('drops a queued message that is deleted before it is spoken', async () => {
    world.discord.sendMessage(
      world.member,
      world.text,
      'a long first message to keep the queue busy for a while',
    );
    world.discord.sendMessage(world.member, world.text, 'second');
    world.discord.sendMessage(world.member, world.text, 'third');
    const doomed = world.discord.sendMessage(world.member, world.text, 'never spoken');
    world.discord.sendMessage(world.member, world.text, 'last');
    await world.discord.voice(world.guild).untilFrames(5);
    world.discord.deleteMessage(doomed);
    const heard = await world.discord.voice(world.guild).untilSilent({ quietMs: 900 });
    expect(heard.segments).toHaveLength(4);
    expect(newlySpoken().some((text) => text.includes('never spoken'))).toBe(false);
  });

  it('says in the channel, once, why it could not speak, instead of falling silent', async () => {
    world.tts.inject({ kind: 'status', status: 500 }, { times: 2 });
    const notice = world.discord.untilChannelMessage(world.text);
    world.discord.sendMessage(world.member, world.text, 'this one fails');
    expect((await notice).content).toMatch(/^Auto-read could not speak a message: .*internal error/);
    world.discord.sendMessage(world.member, world.text, 'this one fails too');
    world.discord.sendMessage(world.member, world.text, 'this one is heard');
    await world.discord.voice(world.guild).untilSilent();
    expect(newlySpoken()).toEqual([expect.stringMatching(/this one is heard$/)]);
    // The second failure is logged, not posted: one notice per five minutes per server.
    expect(
      world.discord.channelMessages(world.text).filter((m) => m.content.startsWith('Auto-read could not')),
    ).toHaveLength(1);
  });
});
