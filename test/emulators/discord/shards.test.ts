import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  type DiscordEmulator,
  type DiscordEmulatorOptions,
  type Guild,
  shardOf,
  startDiscordEmulator,
} from '../../../emulators/discord/index.ts';

/** A bare gateway client: what a shard of discord.js sends, without discord.js, so each rule can be seen alone. */
interface RawShard {
  readonly events: { t: string; d: Record<string, unknown> }[];
  /** The close code, once the gateway closed the connection. */
  closed(): Promise<number>;
  send(op: number, d: unknown): void;
  /** Resolves with the first dispatch matching, already received or coming. */
  until(t: string, match?: (d: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  close(): void;
}

const INTENTS = (1 << 0) | (1 << 7) | (1 << 9) | (1 << 15) | (1 << 1);

async function connect(emulator: DiscordEmulator, shard?: unknown): Promise<RawShard> {
  const ws = new WebSocket(`${emulator.gatewayUrl}?v=10&encoding=json`);
  const events: RawShard['events'] = [];
  const waiters = new Set<() => void>();
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  ws.on('message', (raw) => {
    const packet = JSON.parse(String(raw)) as { op: number; t?: string; d: Record<string, unknown> };
    if (packet.op === 10) {
      const d = {
        token: emulator.token,
        intents: INTENTS,
        properties: {},
        ...(shard === undefined ? {} : { shard }),
      };
      ws.send(JSON.stringify({ op: 2, d }));
    }
    if (packet.op === 0 && packet.t) events.push({ t: packet.t, d: packet.d });
    for (const wake of [...waiters]) wake();
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const client: RawShard = {
    events,
    closed: () => closed,
    send: (op, d) => ws.send(JSON.stringify({ op, d })),
    until: (t, match = () => true) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${t} within 3 s`)), 3000);
        const check = (): void => {
          const found = events.find((e) => e.t === t && match(e.d));
          if (!found) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found.d);
        };
        waiters.add(check);
        check();
      }),
    close: () => ws.close(),
  };
  return client;
}

const guildIdsOf = (shard: RawShard, t: string): string[] =>
  shard.events.filter((e) => e.t === t).map((e) => String(e.d.id));
const guildIdOfEvent = (e: { t: string; d: Record<string, unknown> }): string | undefined =>
  (e.d.guild_id as string | undefined) ?? (e.t.startsWith('GUILD_') ? (e.d.id as string) : undefined);

describe('the Discord emulator, sharded as Discord shards', () => {
  let emulator: DiscordEmulator | undefined;
  const sockets: RawShard[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.close();
    await emulator?.close();
    emulator = undefined;
  });
  const start = async (o: DiscordEmulatorOptions = {}): Promise<DiscordEmulator> => {
    emulator = await startDiscordEmulator(o);
    return emulator;
  };
  const open = async (e: DiscordEmulator, shard?: unknown): Promise<RawShard> => {
    const socket = await connect(e, shard);
    sockets.push(socket);
    return socket;
  };

  it('gives each shard only its own guilds, in READY and GUILD_CREATE, with READY echoing the shard', async () => {
    const e = await start();
    const guilds = Array.from({ length: 8 }, (_, i) => e.createGuild({ name: `g${i}` }));
    const owned = (id: number) => guilds.filter((g) => shardOf(g.id, 2) === id).map((g) => g.id);
    // Guilds made in one burst spread over both shards, as real guilds do.
    expect(owned(0).length).toBeGreaterThan(0);
    expect(owned(1).length).toBeGreaterThan(0);

    const zero = await open(e, [0, 2]);
    const one = await open(e, [1, 2]);
    const ready0 = await zero.until('READY');
    const ready1 = await one.until('READY');
    await e.untilReady();
    expect(ready0.shard).toEqual([0, 2]);
    expect(ready1.shard).toEqual([1, 2]);
    expect((ready0.guilds as { id: string }[]).map((g) => g.id).sort()).toEqual(owned(0).sort());
    expect((ready1.guilds as { id: string }[]).map((g) => g.id).sort()).toEqual(owned(1).sort());
    expect(guildIdsOf(zero, 'GUILD_CREATE').sort()).toEqual(owned(0).sort());
    expect(guildIdsOf(one, 'GUILD_CREATE').sort()).toEqual(owned(1).sort());
    expect(e.gatewaySessions().map((s) => s.shard)).toEqual([
      [0, 2],
      [1, 2],
    ]);
  });

  it('sends every guild event (messages, members, voice states, interactions, new guilds) to the owning shard only', async () => {
    const e = await start();
    const guilds: Guild[] = Array.from({ length: 4 }, (_, i) => e.createGuild({ name: `g${i}` }));
    const zero = await open(e, [0, 2]);
    const one = await open(e, [1, 2]);
    await e.untilReady();
    const shards = [zero, one];
    for (const guild of guilds) {
      const text = guild.addTextChannel('chat');
      const lounge = guild.addVoiceChannel('Lounge');
      const member = guild.addMember({ name: `m-${guild.name}` });
      e.sendMessage(member, text, `hello ${guild.name}`);
      guild.joinVoice(member, lounge);
      e.slash(member, 'speak', { text: 'hi' }, { timeoutMs: 50 }).catch(() => {});
    }
    const late = e.createGuild({ name: 'late' });
    for (const guild of [...guilds, late]) {
      const owner = shards[shardOf(guild.id, 2)];
      await owner?.until('GUILD_CREATE', (d) => d.id === guild.id);
    }
    for (const guild of guilds) {
      const owner = shards[shardOf(guild.id, 2)];
      await owner?.until('INTERACTION_CREATE', (d) => d.guild_id === guild.id);
    }
    for (const [id, shard] of shards.entries()) {
      const foreign = shard.events.filter((ev) => {
        const guildId = guildIdOfEvent(ev);
        return guildId !== undefined && shardOf(guildId, 2) !== id;
      });
      expect(foreign.map((ev) => ev.t)).toEqual([]);
      const kinds = new Set(shard.events.map((ev) => ev.t));
      for (const kind of ['MESSAGE_CREATE', 'GUILD_MEMBER_ADD', 'VOICE_STATE_UPDATE', 'INTERACTION_CREATE']) {
        expect(kinds).toContain(kind);
      }
    }
  });

  it('takes a voice state update (op 4) only from the shard that owns the guild', async () => {
    const e = await start();
    const guilds = Array.from({ length: 4 }, (_, i) => e.createGuild({ name: `g${i}` }));
    const guild = guilds[0] as Guild;
    const lounge = guild.addVoiceChannel('Lounge');
    const zero = await open(e, [0, 2]);
    const one = await open(e, [1, 2]);
    await e.untilReady();
    const [owner, other] = shardOf(guild.id, 2) === 0 ? [zero, one] : [one, zero];
    other.send(4, { guild_id: guild.id, channel_id: lounge.id, self_deaf: true, self_mute: false });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(e.voiceRequests).toEqual([]);
    owner.send(4, { guild_id: guild.id, channel_id: lounge.id, self_deaf: true, self_mute: false });
    const server = await owner.until('VOICE_SERVER_UPDATE', (d) => d.guild_id === guild.id);
    expect(server.endpoint).toBeTruthy();
    expect(e.voiceRequests.map((r) => r.granted)).toEqual([true]);
    const botState = await owner.until('VOICE_STATE_UPDATE', (d) => d.user_id === e.botUserId);
    // The bot's voice session id is the gateway session of the guild's own shard.
    const session = e.gatewaySessions().find((s) => s.shard[0] === shardOf(guild.id, 2));
    expect(botState.session_id).toBe(session?.sessionId);
    expect(other.events.filter((ev) => ev.t.startsWith('VOICE_'))).toEqual([]);
  });

  it.each([
    { case: 'an id at the count', shard: [2, 2] },
    { case: 'a count of 0', shard: [0, 0] },
    { case: 'a negative id', shard: [-1, 2] },
    { case: 'not a pair', shard: [1] },
    { case: 'not numbers', shard: ['0', '2'] },
  ])('closes an IDENTIFY with an invalid shard ($case) with 4010', async ({ shard }) => {
    const e = await start();
    const socket = await open(e, shard);
    expect(await socket.closed()).toBe(4010);
    expect(e.identifies).toEqual([]);
  });

  it('closes with 4011 (sharding required) a session that would carry too many guilds, and takes it sharded', async () => {
    const e = await start({ maxGuildsPerShard: 3 });
    for (let i = 0; i < 5; i += 1) e.createGuild({ name: `g${i}` });
    const whole = await open(e);
    expect(await whole.closed()).toBe(4011);
    const zero = await open(e, [0, 2]);
    const one = await open(e, [1, 2]);
    await zero.until('READY');
    await one.until('READY');
    await e.untilReady();
  });

  it('keeps a shard-less session as one shard [0, 1] that gets everything', async () => {
    const e = await start();
    const guilds = Array.from({ length: 3 }, (_, i) => e.createGuild({ name: `g${i}` }));
    const whole = await open(e);
    const ready = await whole.until('READY');
    expect(ready.shard).toEqual([0, 1]);
    expect(guildIdsOf(whole, 'GUILD_CREATE').sort()).toEqual(guilds.map((g) => g.id).sort());
    expect(e.identifies.map((i) => i.shard)).toEqual([undefined]);
  });

  it('recommends a shard count and reports the session start limit in GET /gateway/bot', async () => {
    const gatewayBot = async (e: DiscordEmulator) =>
      (await (
        await fetch(`${e.restUrl}/v10/gateway/bot`, { headers: { authorization: `Bot ${e.token}` } })
      ).json()) as { shards: number; session_start_limit: Record<string, number> };
    const plain = await start();
    expect(await gatewayBot(plain)).toMatchObject({
      shards: 1,
      session_start_limit: { total: 1000, remaining: 1000, max_concurrency: 1 },
    });
    await open(plain, [0, 1]);
    await plain.untilReady();
    expect((await gatewayBot(plain)).session_start_limit.remaining).toBe(999);
    await plain.close();
    const big = await start({ shards: 4, maxConcurrency: 16 });
    expect(await gatewayBot(big)).toMatchObject({ shards: 4, session_start_limit: { max_concurrency: 16 } });
  });
});
