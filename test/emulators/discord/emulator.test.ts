import { PermissionFlagsBits as P } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type DiscordEmulator,
  intervalStats,
  startDiscordEmulator,
} from '../../../emulators/discord/index.ts';
import {
  ALL_PERMISSIONS,
  type ChannelState,
  channelPermissions,
  DEFAULT_EVERYONE_PERMISSIONS,
  type GuildState,
  type MemberState,
} from '../../../emulators/discord/model.ts';

const guildWith = (memberRolePerms: bigint): { guild: GuildState; member: MemberState; bot: MemberState } => {
  const member: MemberState = { id: 'm', name: 'm', nick: null, bot: false, roleIds: ['r'], joinedAt: '' };
  const bot: MemberState = { id: 'b', name: 'b', nick: null, bot: true, roleIds: ['botrole'], joinedAt: '' };
  const guild: GuildState = {
    id: 'g',
    name: 'g',
    ownerId: 'owner',
    roles: [
      { id: 'g', name: '@everyone', permissions: DEFAULT_EVERYONE_PERMISSIONS, position: 0, managed: false },
      { id: 'r', name: 'r', permissions: memberRolePerms, position: 1, managed: false },
      { id: 'botrole', name: 'bot', permissions: P.ViewChannel | P.Connect, position: 2, managed: true },
    ],
    channels: new Map(),
    members: new Map([
      ['m', member],
      ['b', bot],
    ]),
    voice: new Map(),
    botRoleId: 'botrole',
    botPresent: true,
  };
  return { guild, member, bot };
};

const channel = (overwrites: ChannelState['overwrites']): ChannelState => ({
  id: 'c',
  guildId: 'g',
  name: 'c',
  type: 'voice',
  position: 0,
  userLimit: 0,
  overwrites,
});

describe('channelPermissions (Discord order: base, @everyone, roles, member)', () => {
  it.each([
    { case: 'plain member gets @everyone', role: 0n, over: [], has: P.Connect, lacks: P.MoveMembers },
    { case: 'Administrator implies all', role: P.Administrator, over: [], has: ALL_PERMISSIONS, lacks: 0n },
    {
      case: '@everyone deny removes',
      role: 0n,
      over: [{ id: 'g', type: 0 as const, allow: 0n, deny: P.Connect }],
      has: P.Speak,
      lacks: P.Connect,
    },
    {
      case: 'role allow beats @everyone deny',
      role: 0n,
      over: [
        { id: 'g', type: 0 as const, allow: 0n, deny: P.Connect },
        { id: 'r', type: 0 as const, allow: P.Connect, deny: 0n },
      ],
      has: P.Connect,
      lacks: 0n,
    },
    {
      case: 'member deny beats role allow',
      role: 0n,
      over: [
        { id: 'r', type: 0 as const, allow: P.Speak, deny: 0n },
        { id: 'm', type: 1 as const, allow: 0n, deny: P.Speak },
      ],
      has: P.Connect,
      lacks: P.Speak,
    },
    {
      case: 'no ViewChannel means nothing',
      role: 0n,
      over: [{ id: 'm', type: 1 as const, allow: 0n, deny: P.ViewChannel }],
      has: 0n,
      lacks: P.Connect,
    },
  ])('$case', ({ role, over, has, lacks }) => {
    const { guild, member } = guildWith(role);
    const perms = channelPermissions(guild, member, channel(over));
    expect(perms & has).toBe(has);
    expect(perms & lacks).toBe(0n);
  });

  it("gives the bot exactly its role's permissions (no @everyone), so a test can take one away", () => {
    const { guild, bot } = guildWith(0n);
    expect(channelPermissions(guild, bot, channel([]))).toBe(P.ViewChannel | P.Connect);
  });
});

describe('intervalStats', () => {
  it.each([
    { times: [], mean: 0, p99: 0 },
    { times: [0, 20, 40, 60], mean: 20, p99: 20 },
    { times: [0, 20, 40, 100], mean: 100 / 3, p99: 60 },
  ])('$times', ({ times, mean, p99 }) => {
    const stats = intervalStats(times);
    expect(stats.meanMs).toBeCloseTo(mean);
    expect(stats.p99Ms).toBeCloseTo(p99);
  });
});

describe('the REST side without a bot', () => {
  let emulator: DiscordEmulator | undefined;
  afterEach(async () => {
    await emulator?.close();
  });

  it('hands out the gateway only with the right bot token, and records every call', async () => {
    emulator = await startDiscordEmulator();
    const bad = await fetch(`${emulator.restUrl}/v10/gateway/bot`, {
      headers: { authorization: 'Bot nope' },
    });
    expect(bad.status).toBe(401);
    const good = await fetch(`${emulator.restUrl}/v10/gateway/bot`, {
      headers: { authorization: `Bot ${emulator.token}` },
    });
    expect(await good.json()).toMatchObject({ url: emulator.gatewayUrl, shards: 1 });
    const unknown = await fetch(`${emulator.restUrl}/v10/nowhere`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ message: '404: Not Found', code: 0 });
    expect(emulator.rest.map((c) => [c.path, c.status, c.authorized])).toEqual([
      ['/gateway/bot', 401, false],
      ['/gateway/bot', 200, true],
      ['/nowhere', 404, false],
    ]);
  });

  it('refuses a bot post where the bot lacks Send Messages (403 50013)', async () => {
    emulator = await startDiscordEmulator();
    const guild = emulator.createGuild({ name: 'g' });
    const text = guild.addTextChannel('t');
    guild.setBotPermissions(P.ViewChannel, text);
    const response = await fetch(`${emulator.restUrl}/v10/channels/${text.id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bot ${emulator.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'hi' }),
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 50013 });
    expect(emulator.channelMessages(text)).toEqual([]);
  });

  it('refuses to seat a member in a full channel unless they may move members', async () => {
    emulator = await startDiscordEmulator();
    const guild = emulator.createGuild({ name: 'g' });
    const small = guild.addVoiceChannel('small', { userLimit: 1 });
    const a = guild.addMember({ name: 'a' });
    const b = guild.addMember({ name: 'b' });
    const mod = guild.addMember({ name: 'mod', permissions: P.MoveMembers });
    guild.joinVoice(a, small);
    expect(() => guild.joinVoice(b, small)).toThrow(/full/);
    guild.joinVoice(mod, small);
    expect(guild.voiceMembers(small).sort()).toEqual([a.id, mod.id].sort());
  });
});
