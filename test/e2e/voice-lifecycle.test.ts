import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SPEAKERS, expectedDurationMs } from '../../emulators/tts/index.ts';
import { createWorld, type World, type WorldOptions } from './harness.ts';

// How a voice session ends, survives, or gives up — each with a world of its own, since each breaks something.

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});
async function open(options: WorldOptions = {}): Promise<World> {
  world = await createWorld(options);
  return world;
}
const isGenerate = (path: string) => path.endsWith('/speech/generate');

describe('leaving', () => {
  it('leaves when the last human leaves the channel, and says so', async () => {
    const w = await open();
    await w.discord.slash(w.member, 'join');
    await w.discord.voice(w.guild).untilConnected();
    const announced = w.discord.untilChannelMessage(w.text);
    w.guild.leaveVoice(w.member);
    expect(w.guild.botVoiceChannelId()).toBe(w.lounge.id); // the admin is still there
    w.guild.leaveVoice(w.admin);
    expect((await announced).content).toMatch(/Left Lounge: nobody is listening/);
    await w.discord.voice(w.guild).untilDisconnected();
    expect(w.guild.botVoiceChannelId()).toBeNull();
  });

  it('leaves after the idle timeout, which a move does not reset', async () => {
    const w = await open({ env: { IDLE_TIMEOUT_SECONDS: '2' } });
    const stage = w.guild.addVoiceChannel('Stage');
    await w.discord.slash(w.member, 'speak', { text: 'Short.' });
    await w.discord.voice(w.guild).untilSilent();
    const idleFrom = performance.now();
    const announced = w.discord.untilChannelMessage(w.text, { timeoutMs: 8_000 });
    w.guild.joinVoice(w.admin, stage);
    w.guild.moveBot(stage);
    expect((await announced).content).toMatch(/Left Stage: nothing to say for a while/);
    const idleMs = performance.now() - idleFrom;
    console.log(
      `idle leave ${idleMs.toFixed(0)} ms after the audio went quiet (timeout 2000 ms, moved once)`,
    );
    expect(w.guild.botVoiceChannelId()).toBeNull();
  });

  it('follows a move by an admin and keeps speaking in the new channel', async () => {
    const w = await open();
    const stage = w.guild.addVoiceChannel('Stage');
    await w.discord.slash(w.member, 'join');
    await w.discord.voice(w.guild).untilConnected();
    w.guild.joinVoice(w.admin, stage);
    w.guild.moveBot(stage);
    await w.discord.voice(w.guild).untilConnected();
    const reply = await w.discord.slash(w.admin, 'speak', { text: 'Still here after the move.' });
    expect(reply.content).toMatch(/Speaking now/);
    const heard = await w.discord.voice(w.guild).untilSilent();
    expect(heard.segments).toHaveLength(1);
    expect(w.guild.botVoiceChannelId()).toBe(stage.id);
  });

  it('clears the queue and aborts the request in flight when kicked from voice', async () => {
    const w = await open({ tts: { speed: 1 } });
    await w.discord.slash(w.member, 'speak', { text: 'z'.repeat(200) });
    await w.discord.slash(w.member, 'speak', { text: 'never said' });
    await w.discord.voice(w.guild).untilFrames(5);
    const announced = w.discord.untilChannelMessage(w.text, { timeoutMs: 10_000 });
    w.guild.moveBot(null);
    expect((await announced).content).toMatch(/disconnected from Lounge; the queue is cleared/);
    const spoken = w.tts.requests
      .filter((r) => isGenerate(r.path))
      .map((r) => (r.body as { text: string }).text);
    expect(spoken).not.toContain('never said'.repeat(2));
    // Only the look-ahead may have been synthesised; nothing new starts once the session is over.
    const count = spoken.length;
    await w.discord.slash(w.member, 'skip');
    expect(w.tts.requests.filter((r) => isGenerate(r.path))).toHaveLength(count);
  });

  it('ends the session when its channel is deleted', async () => {
    const w = await open();
    await w.discord.slash(w.member, 'join');
    await w.discord.voice(w.guild).untilConnected();
    const announced = w.discord.untilChannelMessage(w.text);
    w.guild.deleteChannel(w.lounge);
    // The emulator moves everyone out before CHANNEL_DELETE, so "nobody left" may be noticed first.
    expect((await announced).content).toMatch(/voice channel was deleted|nobody is listening/);
    await w.discord.voice(w.guild).untilDisconnected();
    expect(w.herald().client.guilds.cache.get(w.guild.id)?.members.me?.voice.channelId ?? null).toBeNull();
  });

  it('ends the session when removed from the server, and keeps running', async () => {
    const w = await open();
    await w.discord.slash(w.member, 'join');
    await w.discord.voice(w.guild).untilConnected();
    w.guild.removeBot();
    await w.discord.voice(w.guild).untilDisconnected();
    // Another server still gets answers.
    const other = w.discord.createGuild({ name: 'Second' });
    other.addTextChannel('chat');
    const room = other.addVoiceChannel('Room');
    const someone = other.addMember({ name: 'Fay' });
    other.joinVoice(someone, room);
    await waitUntil(() => w.herald().client.guilds.cache.has(other.id));
    expect((await w.discord.slash(someone, 'speak', { text: 'Hello second server.' })).content).toMatch(
      /Speaking now/,
    );
    expect((await w.discord.voice(other).untilSilent()).segments).toHaveLength(1);
  });
});

describe('reconnecting', () => {
  it('rejoins after a 4006 close and goes on speaking', async () => {
    const w = await open();
    await w.discord.slash(w.member, 'join');
    const capture = w.discord.voice(w.guild);
    await capture.untilConnected();
    w.discord.faults.closeVoice(w.guild, 4006);
    await capture.untilDisconnected();
    await capture.untilConnected();
    await w.discord.slash(w.member, 'speak', { text: 'Back again.' });
    expect((await capture.untilSilent()).segments).toHaveLength(1);
  });

  it('paces rejoins after repeated 4017 closes, then gives up and says so', async () => {
    const w = await open({ voiceConnectTimeoutMs: 15_000 });
    await w.discord.slash(w.member, 'join');
    const capture = w.discord.voice(w.guild);
    const announced = w.discord.untilChannelMessage(w.text, { timeoutMs: 40_000 });
    const reconnectedAfterMs: number[] = [];
    let givenUp = false;
    void announced.then(() => {
      givenUp = true;
    });
    for (let attempt = 0; attempt < 8 && !givenUp; attempt++) {
      await Promise.race([capture.untilConnected({ timeoutMs: 30_000 }), announced]);
      if (givenUp) break;
      const closedAt = performance.now();
      w.discord.faults.closeVoice(w.guild, 4017);
      await capture.untilDisconnected();
      await Promise.race([capture.untilConnected({ timeoutMs: 30_000 }), announced]);
      if (!givenUp) reconnectedAfterMs.push(performance.now() - closedAt);
    }
    expect((await announced).content).toMatch(/lost the voice connection to Lounge/);
    console.log(`4017 rejoin delays: ${reconnectedAfterMs.map((ms) => `${ms.toFixed(0)} ms`).join(', ')}`);
    // Bounded: four rejoins, each later than the one before (backoff), never a tight loop.
    expect(reconnectedAfterMs.length).toBe(4);
    for (let i = 1; i < reconnectedAfterMs.length; i++) {
      expect(reconnectedAfterMs[i]).toBeGreaterThan(reconnectedAfterMs[i - 1] ?? 0);
    }
    await waitUntil(() => w.guild.botVoiceChannelId() === null);
  });

  it('gives up on a join Discord never completes, aborts the queued request, and says so', async () => {
    const w = await open({ voiceConnectTimeoutMs: 1_500 });
    w.discord.faults.refuseVoiceJoin(true);
    const announced = w.discord.untilChannelMessage(w.text);
    expect((await w.discord.slash(w.member, 'speak', { text: 'Can anyone hear me?' })).content).toMatch(
      /Speaking now/,
    );
    expect((await announced).content).toMatch(/could not connect to Lounge/);
    w.discord.faults.refuseVoiceJoin(false);
    // Herald is usable again at once.
    expect((await w.discord.slash(w.member, 'speak', { text: 'Now?' })).content).toMatch(/Speaking now/);
    const heard = await w.discord.voice(w.guild).untilSilent();
    expect(heard.soundMs).toBeGreaterThan(expectedDurationMs('Now?') - 60);
  });
});

describe('a service that misbehaves mid-stream', () => {
  it('ends a stalled stream with a clear message, then plays the next request', async () => {
    const w = await open({ ttsTimeouts: { idleMs: 1_000 } });
    const [first, second] = DEFAULT_SPEAKERS;
    w.tts.inject({ kind: 'stall', afterBytes: 3_000, ms: Number.POSITIVE_INFINITY });
    const reply = await w.discord.slash(w.member, 'speak', {
      text: 'a'.repeat(100),
      speaker: first?.name ?? '',
    });
    await w.discord.slash(w.member, 'speak', { text: 'After the stall.', speaker: second?.name ?? '' });
    const failure = await reply.untilFollowUp({ timeoutMs: 10_000 });
    expect(failure.ephemeral).toBe(true);
    expect(failure.content).toMatch(/took too long to answer/);
    const heard = await w.discord.voice(w.guild).untilSilent({ quietMs: 800 });
    expect(heard.segments.at(-1)?.dominantHz).toBeCloseTo(second?.toneHz ?? 0, -1);
  });

  it('with the default timeouts, tells the member of a stream that stopped mid-utterance, not just falls silent', async () => {
    // The player gives up on audio that stopped coming after its missed frames: before, 5 s, half the TTS client's
    // 10 s idle timeout, so the utterance was cut without a word. The idle timeout now ends it first, and says why.
    const w = await open();
    w.tts.inject({ kind: 'stall', afterBytes: 3_000, ms: Number.POSITIVE_INFINITY });
    const reply = await w.discord.slash(w.member, 'speak', { text: 'a'.repeat(100) });
    const failure = await reply.untilFollowUp({ timeoutMs: 20_000 });
    expect(failure.ephemeral).toBe(true);
    expect(failure.content).toMatch(/took too long to answer/);
  }, 30_000);

  it('tells the member when the service’s audio stops short (its fault, not Herald’s), then plays the next', async () => {
    const w = await open();
    const [first, second] = DEFAULT_SPEAKERS;
    // The response ends cleanly at the HTTP level, inside an Ogg page: only the demuxer can tell.
    w.tts.inject({ kind: 'truncate', afterBytes: 3_000 }, { times: 1 });
    const reply = await w.discord.slash(w.member, 'speak', {
      text: 'a'.repeat(100),
      speaker: first?.name ?? '',
    });
    await w.discord.slash(w.member, 'speak', { text: 'After the cut.', speaker: second?.name ?? '' });
    const failure = await reply.untilFollowUp({ timeoutMs: 10_000 });
    expect(failure.ephemeral).toBe(true);
    expect(failure.content).toMatch(/audio stopped short/);
    expect(failure.content).not.toMatch(/error id/);
    // The next follows the cut at once (no stall between them), so the two may be one segment: the second's pitch
    // dominates it and it lasts at least the second utterance.
    const heard = await w.discord.voice(w.guild).untilSilent({ quietMs: 800 });
    const last = heard.segments.at(-1);
    const hz = last?.dominantHz ?? 0;
    expect(Math.abs(hz - (second?.toneHz ?? 0))).toBeLessThan(Math.abs(hz - (first?.toneHz ?? 0)));
    expect(last?.durationMs).toBeGreaterThan(expectedDurationMs('After the cut.') - 60);
  });

  it('tells the member when the service refuses, and stays up', async () => {
    const w = await open();
    w.tts.inject({ kind: 'status', status: 500 }, { times: 1 });
    const reply = await w.discord.slash(w.member, 'speak', { text: 'Server error please.' });
    const failure = await reply.untilFollowUp();
    expect(failure.content).toMatch(/internal error/);
    await w.discord.slash(w.member, 'speak', { text: 'Works now.' });
    const heard = await w.discord.voice(w.guild).untilSilent();
    expect(heard.soundMs).toBeGreaterThan(expectedDurationMs('Works now.') - 60);
  });
});

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
