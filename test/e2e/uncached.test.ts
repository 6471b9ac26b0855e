/**
 * Events about things Herald never cached, or that changed under it (issue 15, item 4): each has a defined
 * outcome, and each test here fails when that outcome breaks.
 */
import { DatabaseSync } from 'node:sqlite';
import { PermissionFlagsBits } from 'discord.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createWorld, type World, type WorldOptions } from './harness.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});
async function open(options: WorldOptions = {}): Promise<World> {
  world = await createWorld(options);
  return world;
}

/** Texts the service was asked to speak, in order. */
const spoken = (w: World): string[] =>
  w.tts.requests
    .filter((request) => request.path.endsWith('/speech/generate'))
    .map((request) => (request.body as { text?: string }).text ?? '');

/** Speech rows of the ledger with why each was wasted (null: heard). */
function ledger(w: World): { wasted: string | null }[] {
  const db = new DatabaseSync(w.databasePath, { readOnly: true });
  try {
    return db.prepare("SELECT wasted FROM budget_ledger WHERE kind = 'speech' ORDER BY at, id").all() as {
      wasted: string | null;
    }[];
  } finally {
    db.close();
  }
}

const LONG = 'A long first message that keeps the voice channel busy for a good while.';

async function readAloud(w: World): Promise<void> {
  await w.discord.slash(w.admin, 'autoread', { channel: w.text, enabled: true }, { subcommand: 'channel' });
  await w.discord.slash(w.member, 'join');
  await w.discord.voice(w.guild).untilConnected();
}

describe('messages Herald no longer caches', () => {
  it('a queued message deleted after discord.js evicted it (a busy channel): dropped, never paid', async () => {
    const w = await open({ tts: { speed: 1 } });
    await readAloud(w);
    w.discord.sendMessage(w.member, w.text, LONG);
    const doomed = w.discord.sendMessage(w.member, w.text, 'deleted before it was read');
    // discord.js keeps the last 200 messages of a channel: 200 more (not read: the ignore prefix) evict it.
    for (let i = 0; i < 200; i++) w.discord.sendMessage(w.admin, w.text, `!bot command ${i}`);
    await vi.waitFor(() =>
      expect(
        w.herald().client.channels.cache.get(w.text.id)?.isTextBased() &&
          (
            w.herald().client.channels.cache.get(w.text.id) as { messages: { cache: Map<string, unknown> } }
          ).messages.cache.has(doomed.id),
      ).toBe(false),
    );
    // MESSAGE_DELETE carries only ids: without the Message partial discord.js would drop it silently.
    w.discord.deleteMessage(doomed);
    w.discord.sendMessage(w.member, w.text, 'after it');
    await vi.waitFor(() => expect(spoken(w).some((text) => text.includes('after it'))).toBe(true), {
      timeout: 15_000,
    });
    expect(spoken(w).some((text) => text.includes('deleted before'))).toBe(false);
    expect(ledger(w).every((row) => row.wasted === null)).toBe(true);
  });

  it('a queued message deleted after a restart (nothing cached yet): not said when Herald finishes its queue', async () => {
    const w = await open({ tts: { speed: 1 } });
    await readAloud(w);
    w.discord.sendMessage(w.member, w.text, LONG);
    w.discord.sendMessage(w.member, w.text, 'said after the restart');
    const doomed = w.discord.sendMessage(w.member, w.text, 'deleted while Herald was away');
    w.discord.sendMessage(w.member, w.text, 'the last one');
    await w.discord.voice(w.guild).untilFrames(5);
    // Deleted the moment Herald is back, before it has restored its queue: still not said.
    await w.restart();
    w.discord.deleteMessage(doomed);
    await vi.waitFor(() => expect(spoken(w).some((text) => text.includes('the last one'))).toBe(true), {
      timeout: 20_000,
    });
    expect(spoken(w).some((text) => text.includes('while Herald was away'))).toBe(false);
  });

  it('a queued message edited before it is read: the edited text is read, in its place, paid once', async () => {
    const w = await open({ tts: { speed: 1 } });
    await readAloud(w);
    w.discord.sendMessage(w.member, w.text, LONG);
    const edited = w.discord.sendMessage(w.member, w.text, 'the first draft');
    w.discord.sendMessage(w.member, w.text, 'the last one');
    await w.discord.voice(w.guild).untilFrames(5);
    // Forget it in Herald's cache too: the edit must work from Discord's payload alone.
    const channel = w.herald().client.channels.cache.get(w.text.id) as unknown as {
      messages: { cache: Map<string, unknown> };
    };
    channel.messages.cache.delete(edited.id);
    w.discord.editMessage(edited, 'the final wording');
    await vi.waitFor(() => expect(spoken(w).some((text) => text.includes('the last one'))).toBe(true), {
      timeout: 20_000,
    });
    const texts = spoken(w);
    expect(texts.some((text) => text.includes('first draft'))).toBe(false);
    const wording = texts.findIndex((text) => text.includes('the final wording'));
    expect(wording).toBeGreaterThan(0);
    expect(wording).toBeLessThan(texts.findIndex((text) => text.includes('the last one')));
    expect(texts).toHaveLength(3);
  });
});

describe('voice that changes under Herald', () => {
  it('a member leaving during their own utterance: it is said to the end, and their next one too', async () => {
    const w = await open({ tts: { speed: 1 } });
    await w.discord.slash(w.member, 'speak', { text: 'Goodbye everyone, I am off now.' });
    await w.discord.slash(w.member, 'speak', { text: 'See you tomorrow.' });
    await w.discord.voice(w.guild).untilFrames(5);
    w.guild.leaveVoice(w.member);
    // The admin still listens: both are heard in full (typed before leaving, as "bye" usually is).
    await vi.waitFor(() => expect(ledger(w)).toHaveLength(2), { timeout: 15_000 });
    const heard = await w.discord.voice(w.guild).untilSilent({ quietMs: 1_000, timeoutMs: 20_000 });
    expect(heard.segments.length).toBeGreaterThanOrEqual(1);
    expect(ledger(w).map((row) => row.wasted)).toEqual([null, null]);
    expect(w.guild.botVoiceChannelId()).toBe(w.lounge.id);
  });

  it('its voice channel deleted mid-queue: the session ends, the paid audio is recorded as wasted, nothing more is paid, no rejoin after a restart', async () => {
    const w = await open({ tts: { speed: 1 } });
    await w.discord.slash(w.member, 'speak', { text: 'The first thing said, long enough to hear.' });
    await w.discord.slash(w.member, 'speak', { text: 'And then the second thing, said right after.' });
    await w.discord.slash(w.member, 'speak', { text: 'A third that is never paid for.' });
    await vi.waitFor(() => expect(ledger(w)).toHaveLength(2), { timeout: 10_000 });
    const announced = w.discord.untilChannelMessage(w.text);
    w.guild.deleteChannel(w.lounge);
    // Discord moves everyone out as it deletes the channel, so "nobody left" may be noticed first.
    expect((await announced).content).toMatch(/voice channel was deleted|nobody is listening/);
    await vi.waitFor(() => expect(ledger(w).map((row) => row.wasted)).toEqual([null, expect.any(String)]));
    expect(spoken(w).some((text) => text.includes('never paid'))).toBe(false);
    await w.restart();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(w.guild.botVoiceChannelId()).toBeNull();
    expect(spoken(w).some((text) => text.includes('never paid'))).toBe(false);
  });

  it('moved by an admin mid-queue: the rest is said in the new channel', async () => {
    const w = await open({ tts: { speed: 1 } });
    const stage = w.guild.addVoiceChannel('Stage');
    await w.discord.slash(w.member, 'speak', { text: 'Said in the Lounge, long enough to be moved.' });
    await w.discord.slash(w.member, 'speak', { text: 'Said on the Stage.' });
    await w.discord.voice(w.guild).untilFrames(5);
    w.guild.joinVoice(w.admin, stage);
    w.guild.moveBot(stage);
    await vi.waitFor(() => expect(spoken(w).some((text) => text.includes('on the Stage'))).toBe(true), {
      timeout: 15_000,
    });
    await vi.waitFor(() => expect(ledger(w).filter((row) => row.wasted === null)).toHaveLength(2), {
      timeout: 15_000,
    });
    expect(w.guild.botVoiceChannelId()).toBe(stage.id);
    expect(w.guild.voiceMembers(stage)).toContain(w.admin.id);
  });

  it('disconnected by an admin mid-queue: told, the queue cleared, paid audio recorded as kicked, no rejoin', async () => {
    const w = await open({ tts: { speed: 1 } });
    await w.discord.slash(w.member, 'speak', { text: 'The first thing said, long enough to hear.' });
    await w.discord.slash(w.member, 'speak', { text: 'And then the second thing, said right after.' });
    await w.discord.slash(w.member, 'speak', { text: 'A third that is never paid for.' });
    await vi.waitFor(() => expect(ledger(w)).toHaveLength(2), { timeout: 10_000 });
    const announced = w.discord.untilChannelMessage(w.text, { timeoutMs: 15_000 });
    w.guild.moveBot(null);
    expect((await announced).content).toMatch(/disconnected from Lounge; the queue is cleared/);
    await vi.waitFor(() => expect(ledger(w).map((row) => row.wasted)).toEqual([null, 'kicked']));
    expect(spoken(w).some((text) => text.includes('never paid'))).toBe(false);
    expect(w.guild.botVoiceChannelId()).toBeNull();
  });
});

describe('permissions taken away mid-stream', () => {
  it('Speak revoked: Herald leaves and says why instead of paying for audio nobody hears; the next /speak names the permission', async () => {
    const w = await open({ tts: { speed: 1 } });
    await w.discord.slash(w.member, 'speak', { text: 'The first thing said, long enough to hear.' });
    await w.discord.slash(w.member, 'speak', { text: 'And then the second thing, said right after.' });
    await w.discord.slash(w.member, 'speak', { text: 'A third that is never paid for.' });
    await w.discord.voice(w.guild).untilFrames(5);
    const announced = w.discord.untilChannelMessage(w.text);
    w.guild.setBotPermissions(PermissionFlagsBits.ViewChannel | PermissionFlagsBits.Connect, w.lounge);
    expect((await announced).content).toMatch(/may no longer speak in Lounge/);
    await w.discord.voice(w.guild).untilDisconnected();
    expect(spoken(w).some((text) => text.includes('never paid'))).toBe(false);
    // The one playing counts as heard (it was, in part); the one paid for next is wasted for the lost permission.
    const rows = ledger(w).map((row) => row.wasted);
    expect(rows.length).toBeLessThanOrEqual(2);
    expect(rows.slice(1)).toEqual(rows.length === 2 ? ['lost-speak'] : []);
    const again = await w.discord.slash(w.member, 'speak', { text: 'Can you hear me?' });
    expect(again.content).toMatch(/missing the Speak permission/);
  });

  it('Send Messages revoked in the text channel: the end of a session cannot be posted, Herald stays up and answers', async () => {
    const w = await open();
    await w.discord.slash(w.member, 'join');
    await w.discord.voice(w.guild).untilConnected();
    w.guild.setBotPermissions(PermissionFlagsBits.ViewChannel, w.text);
    w.guild.moveBot(null);
    await vi.waitFor(
      () => expect(w.logs.some((line) => line.includes('could not announce the end'))).toBe(true),
      {
        timeout: 15_000,
      },
    );
    expect(w.discord.channelMessages(w.text)).toHaveLength(0);
    // Interaction replies are webhooks, not channel messages: the member is still told everything.
    const reply = await w.discord.slash(w.member, 'speak', { text: 'Back again.' });
    expect(reply.content).toMatch(/Speaking now/);
    expect((await w.discord.voice(w.guild).untilSilent()).segments).toHaveLength(1);
  });
});
