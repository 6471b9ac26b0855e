import { once } from 'node:events';
import { PermissionFlagsBits } from 'discord.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type Channel,
  type DiscordEmulator,
  type Guild,
  type Member,
  startDiscordEmulator,
} from '../../emulators/discord/index.ts';
import { startTestBot, type TestBot } from '../../emulators/discord/test-bot.ts';
import { readOggOpus } from '../../emulators/support/ogg.ts';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';

interface World {
  discord: DiscordEmulator;
  tts: TtsEmulator;
  bot: TestBot;
  guild: Guild;
  text: Channel;
  voice: Channel;
  admin: Member;
  member: Member;
}

async function startWorld(
  o: { gatewayHeartbeatMs?: number; voiceHeartbeatMs?: number } = {},
): Promise<World> {
  const discord = await startDiscordEmulator(o);
  const tts = await startTtsEmulator({ speed: 4 });
  const guild = discord.createGuild({ name: 'Test Server' });
  const text = guild.addTextChannel('general');
  const voice = guild.addVoiceChannel('Lounge');
  const admin = guild.addMember({ name: 'alice', permissions: PermissionFlagsBits.Administrator });
  const member = guild.addMember({ name: 'bob' });
  guild.joinVoice(admin, voice);
  guild.joinVoice(member, voice);
  const speakerId = tts.speakers[0]?.id ?? '';
  const bot = await startTestBot({
    restUrl: discord.restUrl,
    token: discord.token,
    tts: { baseUrl: tts.baseUrl, apiKey: tts.apiKey, speakerId },
  });
  await discord.untilReady();
  return { discord, tts, bot, guild, text, voice, admin, member };
}

async function stopWorld(world: World | undefined): Promise<void> {
  if (!world) return;
  await world.bot.close();
  await world.discord.close();
  await world.tts.close();
}

describe('the Discord emulator, driven by an unmodified discord.js bot', () => {
  let world: World | undefined;
  afterEach(async () => {
    await stopWorld(world);
    world = undefined;
  });

  it('logs in, answers /speak, joins voice and the emulator recovers every Opus frame byte-identical at ~20 ms', async () => {
    world = await startWorld();
    const { discord, bot, guild, member } = world;
    expect(discord.identifies[0]?.intents).toBeGreaterThan(0);
    expect(discord.commands.global.map((c) => c.name)).toContain('speak');

    const reply = await discord.slash(member, 'speak', { text: 'hello from the end-to-end test' });
    expect(reply).toMatchObject({ content: 'Speaking.', ephemeral: true, deferred: true });
    expect(reply.allowedMentions).toEqual({ parse: [] });
    expect(guild.botVoiceChannelId()).toBe(world.voice.id);

    const heard = await discord.voice(guild).untilSilent();
    const ogg = bot.played[0];
    if (!ogg) throw new Error('the bot played nothing');
    const sent = readOggOpus(ogg).packets;
    expect(heard.frames.length).toBe(sent.length);
    const identical = heard.frames.filter((frame, i) => sent[i]?.equals(frame)).length;
    console.log(
      `frames: ${identical}/${sent.length} byte-identical; pacing over ${heard.intervals.count} intervals: ` +
        `mean ${heard.intervals.meanMs.toFixed(2)} ms, p99 ${heard.intervals.p99Ms.toFixed(2)} ms; ` +
        `heard ${heard.soundMs.toFixed(0)} ms of sound at ${heard.segments[0]?.dominantHz.toFixed(0)} Hz`,
    );
    expect(identical).toBe(sent.length);
    expect(heard.intervals.meanMs).toBeGreaterThan(15);
    expect(heard.intervals.meanMs).toBeLessThan(25);
    expect(heard.segments[0]?.dominantHz).toBeCloseTo(world.tts.speakers[0]?.toneHz ?? 0, -1);
    const tail = discord.voice(guild).frames.slice(-4);
    expect(tail.every((f) => f.silence)).toBe(true);
    expect(discord.voice(guild).speaking.map((s) => s.speaking)).toEqual([1, 0]);
    expect(discord.rejectedVoicePackets).toBe(0);
    expect(bot.errors).toEqual([]);
  });

  it('delivers every option type, permissions, autocomplete, buttons, follow-ups and channel messages', async () => {
    world = await startWorld();
    const { discord, admin, member, text, voice } = world;
    const echo = await discord.slash(admin, 'echo', {
      text: 'hi',
      count: 3,
      loud: true,
      where: voice,
      who: member,
    });
    expect(echo.content).toBe('hi x3 loud=true in=Lounge who=bob admin=true appConnect=true');
    const plain = await discord.slash(member, 'echo', { text: 'x' });
    expect(plain.content).toContain('admin=false');

    expect(await discord.autocomplete(member, 'echo', { text: 'b' }, 'text')).toEqual([
      { name: 'beta', value: 'beta' },
    ]);

    const ping = await discord.slash(member, 'ping');
    expect(ping.components[0].components[0].custom_id).toBe('again');
    const followUp = await ping.untilFollowUp();
    expect(followUp).toMatchObject({ content: 'and a follow-up', ephemeral: true });
    const pressed = await discord.press(member, ping.message, 'again');
    expect(pressed.content).toBe('pressed again');
    expect(pressed.components).toEqual([]);

    const hello = discord.untilChannelMessage(text, { timeoutMs: 800 });
    discord.sendMessage(member, text, '!hello');
    // Without MESSAGE_CONTENT the bot sees an empty content, as on Discord, and so does not answer.
    await expect(hello).rejects.toThrow(/timed out/);
    expect(world.bot.seenMessages).toEqual(['']);
    // A mention of the bot is readable even without the intent, so the bot sees it.
    discord.sendMessage(member, text, '!hello', { mentions: [world.guild.bot] });
    expect(await discord.untilChannelMessage(text)).toMatchObject({ content: 'hi', channelId: text.id });
    expect(discord.channelMessages(text).map((m) => m.content)).toEqual(['hi']);

    const kinds = discord.rest.map((c) => `${c.method} ${c.path.replace(/\d{6,}|[\w-]{40,}/g, ':id')}`);
    expect(kinds).toContain('POST /interactions/:id/:id/callback');
    expect(kinds).toContain('POST /webhooks/:id/:id');
    expect(kinds).toContain('POST /channels/:id/messages');
  }, 30_000);

  it('answers a second initial response with 40060 and unknown tokens with 10062', async () => {
    world = await startWorld();
    const { discord, member } = world;
    const reply = await discord.slash(member, 'join');
    expect(reply.content).toBe('Joined.');
    const callback = discord.rest.find((c) => c.path.endsWith('/callback'));
    if (!callback) throw new Error('no callback recorded');
    const again = await fetch(`${discord.restUrl}/v10${callback.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 4, data: { content: 'twice' } }),
    });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ code: 40060 });
    const unknown = await fetch(`${discord.restUrl}/v10/interactions/1/nope/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 4, data: { content: 'x' } }),
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: 10062 });
  });
});

describe('fault controls', () => {
  let world: World | undefined;
  beforeEach(() => {
    world = undefined;
  });
  afterEach(async () => {
    await stopWorld(world);
  });

  const joined = async (w: World): Promise<void> => {
    await w.discord.slash(w.member, 'join');
    await w.discord.voice(w.guild).untilConnected();
  };

  it('4014 leaves the bot disconnected (no automatic rejoin)', async () => {
    world = await startWorld();
    await joined(world);
    const connection = world.bot.connection(world.guild.id);
    world.discord.faults.closeVoice(world.guild, 4014);
    await world.discord.voice(world.guild).untilDisconnected();
    await waitForStatus(connection, 'disconnected');
    expect(world.discord.voiceHandshakes).toEqual({ identified: 1, resumed: 0 });
  });

  it.each([4006, 4017])('%i makes the library rejoin at once (a fresh voice session)', async (code) => {
    world = await startWorld();
    await joined(world);
    const capture = world.discord.voice(world.guild);
    world.discord.faults.closeVoice(world.guild, code);
    await capture.untilDisconnected();
    await capture.untilConnected();
    await waitForStatus(world.bot.connection(world.guild.id), 'ready');
    expect(world.discord.voiceHandshakes).toEqual({ identified: 2, resumed: 0 });
  });

  it('holding voice packets, captures on release what a session sent before it was replaced', async () => {
    world = await startWorld();
    const { discord, bot, guild, member } = world;
    await joined(world);
    discord.setMembersDecrypt(false);
    discord.holdVoicePackets();
    const heldQuiet = async (sources: number): Promise<void> => {
      const deadline = performance.now() + 20_000;
      for (;;) {
        const held = await discord.heldVoicePackets();
        const last = held.lastReceivedAt;
        if (held.sources >= sources && last !== undefined && performance.now() - last > 300) return;
        if (performance.now() > deadline) throw new Error(`held ${JSON.stringify(held)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await discord.slash(member, 'speak', { text: 'before the new session' });
    await heldQuiet(1);
    // A fresh voice session: a new SSRC and a new key; the first session's packets are still held.
    discord.faults.closeVoice(guild, 4006);
    await discord.voice(guild).untilDisconnected();
    await discord.voice(guild).untilConnected();
    await waitForStatus(bot.connection(guild.id), 'ready');
    await discord.slash(member, 'speak', { text: 'after it' });
    await heldQuiet(2);
    expect(discord.voice(guild).frames).toHaveLength(0);
    await discord.releaseVoicePackets();
    discord.setMembersDecrypt(true);
    const frames = discord.voice(guild).frames;
    const sent = bot.played.map((ogg) => readOggOpus(ogg).packets.length);
    expect(sent).toHaveLength(2);
    // Each clip's packets and the silence frames after it, every one authenticated under its own session's key.
    expect(frames.length).toBeGreaterThanOrEqual((sent[0] ?? 0) + (sent[1] ?? 0));
    expect(frames.every((frame) => frame.payload.length > 0)).toBe(true);
    expect(new Set(frames.map((frame) => frame.ssrc)).size).toBe(2);
    expect(discord.rejectedVoicePackets).toBe(0);
  });

  it('4015 makes the library resume the same voice session', async () => {
    world = await startWorld();
    await joined(world);
    const capture = world.discord.voice(world.guild);
    world.discord.faults.closeVoice(world.guild, 4015);
    await capture.untilDisconnected();
    await capture.untilConnected();
    await waitForStatus(world.bot.connection(world.guild.id), 'ready');
    expect(world.discord.voiceHandshakes).toEqual({ identified: 1, resumed: 1 });
  });

  it('dropped voice heartbeats make the client close and resume', async () => {
    world = await startWorld({ voiceHeartbeatMs: 100 });
    await joined(world);
    const capture = world.discord.voice(world.guild);
    world.discord.faults.dropVoiceHeartbeats(true);
    await capture.untilDisconnected({ timeoutMs: 5_000 });
    world.discord.faults.dropVoiceHeartbeats(false);
    await capture.untilConnected({ timeoutMs: 5_000 });
    expect(world.discord.voiceHandshakes.resumed).toBeGreaterThanOrEqual(1);
  });

  it('dropped gateway heartbeats make the client resume its session', async () => {
    world = await startWorld({ gatewayHeartbeatMs: 300 });
    const restored = world.discord.untilSessionRestored({ timeoutMs: 10_000 });
    world.discord.faults.dropGatewayHeartbeats(true);
    // The client sees no ACK, calls the link a zombie and reconnects; answer heartbeats again for the resume.
    await waitUntil(() => world?.discord.gatewayHeartbeats.dropped ?? 0, 1);
    world.discord.faults.dropGatewayHeartbeats(false);
    expect(await restored).toBe('resumed');
    expect((await world.discord.slash(world.member, 'join')).content).toBe('Joined.');
  });

  it('op 7 makes the client resume, and events sent meanwhile still arrive, once', async () => {
    world = await startWorld();
    const { discord, bot, member, text } = world;
    const seen: string[] = [];
    bot.client.on('raw', (packet: { t?: string; d?: { id?: string } }) => {
      if (packet.t === 'MESSAGE_CREATE') seen.push(packet.d?.id ?? '');
    });
    const sent: string[] = [];
    for (let round = 0; round < 5; round++) {
      const restored = discord.untilSessionRestored();
      discord.faults.reconnectGateway();
      sent.push(discord.sendMessage(member, text, `meanwhile ${round}`).id);
      await new Promise((resolve) => setTimeout(resolve, round * 3));
      sent.push(discord.sendMessage(member, text, `later ${round}`).id);
      expect(await restored).toBe('resumed');
    }
    await waitUntil(() => seen.length, sent.length);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toEqual(sent);
    expect(world.discord.identifies).toHaveLength(1);
    expect((await world.discord.slash(world.member, 'join')).content).toBe('Joined.');
  });

  it('op 9 resumable=true: the client resumes, and what happened meanwhile arrives once', async () => {
    world = await startWorld();
    const { discord, bot, member, text } = world;
    const seen: string[] = [];
    // Without the message content intent the content is empty: messages are told apart by their ids.
    bot.client.on('raw', (packet: { t?: string; d?: { id?: string } }) => {
      if (packet.t === 'MESSAGE_CREATE') seen.push(packet.d?.id ?? '');
    });
    const restored = discord.untilSessionRestored();
    discord.faults.invalidateSession(true);
    // Sent at once, before the client's RESUME can have arrived.
    const sent = discord.sendMessage(member, text, 'meanwhile 1');
    expect(await restored).toBe('resumed');
    const after = discord.sendMessage(member, text, 'meanwhile 2');
    await waitUntil(() => seen.length, 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toEqual([sent.id, after.id]);
    expect(discord.identifies).toHaveLength(1);
  });

  it('op 9 resumable=false makes the client identify afresh', async () => {
    world = await startWorld();
    const restored = world.discord.untilSessionRestored({ timeoutMs: 15_000 });
    // discord.js reconnects again if destroyed before it has processed the new READY; wait for its own event.
    const shardReady = once(world.bot.client, 'shardReady');
    world.discord.faults.invalidateSession(false);
    expect(await restored).toBe('identified');
    await shardReady;
    expect(world.discord.identifies).toHaveLength(2);
  });

  it('a refused voice join never gets a voice server, so the bot cannot connect', async () => {
    world = await startWorld();
    world.discord.faults.refuseVoiceJoin(true);
    const reply = world.discord.slash(world.member, 'join', {}, { timeoutMs: 2_000 });
    await expect(reply).rejects.toThrow(/timed out/);
    expect(world.discord.voiceRequests).toMatchObject([{ channelId: world.voice.id, granted: false }]);
    // The voice state was granted (the bot sits in the channel) but no voice server ever came.
    expect(world.guild.botVoiceChannelId()).toBe(world.voice.id);
    expect(world.discord.voice(world.guild).connected).toBe(false);
    expect(world.discord.voiceHandshakes.identified).toBe(0);
  });

  it.each([
    [
      'Connect is denied to the bot there',
      (w: World) =>
        w.guild.setBotPermissions(
          PermissionFlagsBits.ViewChannel | PermissionFlagsBits.SendMessages,
          w.voice,
        ),
    ],
    [
      'the channel is full and the bot lacks Move Members',
      (w: World) => {
        const small = w.guild.addVoiceChannel('Small', { userLimit: 1 });
        w.guild.joinVoice(w.member, small);
      },
    ],
  ])('Discord does not answer a voice join when %s', async (_case, arrange) => {
    world = await startWorld();
    arrange(world);
    const reply = world.discord.slash(world.member, 'join', {}, { timeoutMs: 1_500 });
    await expect(reply).rejects.toThrow(/timed out/);
    expect(world.discord.voiceRequests.map((r) => r.granted)).toEqual([false]);
    expect(world.guild.botVoiceChannelId()).toBeNull();
  });

  it('removing the bot from the guild sends GUILD_DELETE and closes its voice socket', async () => {
    world = await startWorld();
    await joined(world);
    const connection = world.bot.connection(world.guild.id);
    world.guild.removeBot();
    await world.discord.voice(world.guild).untilDisconnected();
    // discord.js destroys the voice adapter on GUILD_DELETE, so the connection ends destroyed or disconnected.
    if (connection?.state.status === 'ready') await once(connection, 'stateChange');
    expect(['destroyed', 'disconnected']).toContain(connection?.state.status);
    expect(world.bot.client.guilds.cache.has(world.guild.id)).toBe(false);
  });

  it('a delayed handshake delays the voice connection by about that much', async () => {
    world = await startWorld();
    world.discord.faults.delayVoiceHandshake(1_500);
    const started = performance.now();
    const reply = world.discord.slash(world.member, 'join');
    await world.discord.voice(world.guild).untilConnected();
    const took = performance.now() - started;
    console.log(`voice connected ${took.toFixed(0)} ms after the command with a 1500 ms handshake delay`);
    expect(took).toBeGreaterThanOrEqual(1_500);
    expect((await reply).content).toBe('Joined.');
  });

  it('moving the bot reconnects it in the new channel; deleting that channel disconnects it', async () => {
    world = await startWorld();
    await joined(world);
    const other = world.guild.addVoiceChannel('Other');
    world.guild.moveBot(other);
    expect(world.guild.botVoiceChannelId()).toBe(other.id);
    await world.discord.voice(world.guild).untilConnected();
    await waitForStatus(world.bot.connection(world.guild.id), 'ready');
    world.guild.deleteChannel(other);
    await world.discord.voice(world.guild).untilDisconnected();
    expect(world.guild.botVoiceChannelId()).toBeNull();
  });
});

/** Polls a library state machine through its own events: resolves when `connection` reaches `status`. */
async function waitForStatus(
  connection: ReturnType<TestBot['connection']>,
  status: 'ready' | 'disconnected',
): Promise<void> {
  if (!connection) throw new Error('no voice connection');
  const { entersState, VoiceConnectionStatus } = await import('@discordjs/voice');
  await entersState(
    connection,
    status === 'ready' ? VoiceConnectionStatus.Ready : VoiceConnectionStatus.Disconnected,
    10_000,
  );
}

/** Resolves once `read()` reaches `atLeast` (checked each 20 ms; for counters that have no event). */
async function waitUntil(read: () => number, atLeast: number): Promise<void> {
  while (read() < atLeast) await new Promise((resolve) => setTimeout(resolve, 20));
}
