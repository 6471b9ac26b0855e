/**
 * A restart resumes (one process, on the same database): a planned stop closes the gateway resumable and keeps the
 * session; the next start RESUMEs it (no IDENTIFY), puts its servers back in voice, goes on with the queue, and
 * reads once what was posted in an auto-read channel and answers once a `/speak` asked while Herald was away. A
 * session Discord ended meanwhile is identified again.
 */
import { describe, expect, it, vi } from 'vitest';
import { type World, worldPerTest } from './harness.ts';

const open = worldPerTest();

/** How many times the service was asked to say something containing `text` (each ask is paid). */
const asked = (world: World, text: string): number =>
  world.tts.requests.filter(
    (request) =>
      request.path.endsWith('/speech/generate') &&
      ((request.body as { text?: string } | undefined)?.text ?? '').includes(text),
  ).length;

async function readingWorld(): Promise<World> {
  const w = await open();
  await w.discord.slash(w.admin, 'autoread', { channel: w.text, enabled: true }, { subcommand: 'channel' });
  await w.discord.slash(w.member, 'join');
  await w.discord.voice(w.guild).untilConnected();
  // Read before the restart: a RESUME must not read it again.
  w.discord.sendMessage(w.member, w.text, 'Read before the restart.');
  await vi.waitFor(() => expect(asked(w, 'Read before the restart.')).toBe(1), { timeout: 10_000 });
  await w.discord.voice(w.guild).untilSilent({ quietMs: 500 });
  return w;
}

describe('a restart resumes the gateway session', () => {
  it('a planned restart RESUMEs: no IDENTIFY, back in voice, the queue goes on, a message sent meanwhile read once', async () => {
    const w = await readingWorld();
    const before = w.discord.gatewayCounts(0);
    await w.discord.slash(w.member, 'speak', {
      text: 'The first sentence, long enough to be cut by the restart.',
    });
    await w.discord.slash(w.member, 'speak', { text: 'The second sentence, said after the restart.' });
    await w.discord.voice(w.guild).untilFrames(5);

    let askedAway: Promise<{ content?: string }> | undefined;
    await w.restart({}, () => {
      w.discord.voice(w.guild).clear();
      w.discord.sendMessage(w.member, w.text, 'Posted while Herald was away.');
      // Discord waits 3 s for an answer: a restart that resumes at once still answers it.
      askedAway = w.discord.slash(w.member, 'speak', { text: 'Asked while Herald was away.' });
    });

    expect(w.discord.gatewayCounts(0)).toEqual({
      identifies: before.identifies,
      resumes: before.resumes + 1,
    });
    expect(w.logs.some((line) => line.includes('resumed the gateway session after a restart'))).toBe(true);
    await vi.waitFor(() => expect(asked(w, 'Posted while Herald was away.')).toBe(1), { timeout: 15_000 });
    const heard = await w.discord.voice(w.guild).untilSilent({ quietMs: 800, timeoutMs: 20_000 });
    expect(w.guild.botVoiceChannelId()).toBe(w.lounge.id);
    expect(heard.segments.length).toBeGreaterThanOrEqual(2);
    expect(asked(w, 'The second sentence')).toBe(1);
    expect(asked(w, 'Posted while Herald was away.')).toBe(1);
    expect(asked(w, 'Read before the restart.')).toBe(1);
    expect((await askedAway)?.content).toMatch(/^(Speaking now|Queued)/);
    await vi.waitFor(() => expect(asked(w, 'Asked while Herald was away.')).toBe(1), { timeout: 15_000 });
    // After the restart, Herald answers as ever (its cache came back with the session).
    const reply = await w.discord.slash(w.member, 'speak', { text: 'And one more, after the resume.' });
    expect(reply.content).toMatch(/^(Speaking now|Queued)/);
    await vi.waitFor(() => expect(asked(w, 'And one more, after the resume.')).toBe(1), { timeout: 10_000 });
  });

  it('a session Discord ended while Herald was away is identified again, and Herald still works', async () => {
    const w = await readingWorld();
    const before = w.discord.gatewayCounts(0);

    await w.restart({}, () => {
      w.discord.faults.invalidateSession(false, 0);
      w.discord.sendMessage(w.member, w.text, 'Posted into a session that ended.');
    });

    expect(w.discord.gatewayCounts(0).identifies).toBe(before.identifies + 1);
    await vi.waitFor(() => expect(w.guild.botVoiceChannelId()).toBe(w.lounge.id), { timeout: 15_000 });
    w.discord.sendMessage(w.member, w.text, 'Posted after the new session.');
    await vi.waitFor(() => expect(asked(w, 'Posted after the new session.')).toBe(1), { timeout: 15_000 });
    expect(asked(w, 'Read before the restart.')).toBe(1);
  });

  it('a server Herald left while away is forgotten, one it joined is kept: the snapshot does not bring back the past', async () => {
    const w = await open();
    const leaving = w.discord.createGuild({ name: 'Left while away' });
    leaving.addTextChannel('chat');
    await vi.waitFor(() => expect(w.herald().client.guilds.cache.has(leaving.id)).toBe(true));
    const before = w.discord.gatewayCounts(0);
    let joined: string | undefined;

    await w.restart({}, () => {
      leaving.removeBot();
      const guild = w.discord.createGuild({ name: 'Joined while away' });
      guild.addTextChannel('chat');
      joined = guild.id;
    });

    expect(w.discord.gatewayCounts(0).resumes).toBe(before.resumes + 1);
    const cached = w.herald().client.guilds.cache;
    expect(cached.has(leaving.id)).toBe(false);
    // Its channel came after its GUILD_CREATE: replayed, and handled once discord.js is ready.
    await vi.waitFor(() => expect(cached.get(joined ?? '')?.channels.cache.size).toBe(1));
    expect(cached.get(w.guild.id)?.channels.cache.get(w.lounge.id)?.name).toBe('Lounge');
  });
});
