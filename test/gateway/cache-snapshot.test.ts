import { ChannelType, Client, ClientUser, type Guild } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import { restoreShard, snapshotShard } from '../../src/gateway/cache-snapshot.ts';

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.destroy()));
});

const BOT = { id: '900', username: 'Herald', discriminator: '0', global_name: null, avatar: null, bot: true };

/** A client whose cache READY and GUILD_CREATE would have filled (no network: nothing logs in). */
function clientWithCache(): Client {
  const client = new Client({ intents: [] });
  clients.push(client);
  const internal = client as unknown as { user: ClientUser; guilds: { _add(data: unknown): Guild } };
  internal.user = new (ClientUser as unknown as new (c: Client, d: unknown) => ClientUser)(client, BOT);
  internal.guilds._add({
    id: '100',
    name: 'Snapshot server',
    owner_id: '1',
    afk_channel_id: '12',
    features: [],
    member_count: 3,
    shardId: 1,
    roles: [
      {
        id: '100',
        name: '@everyone',
        permissions: '1024',
        position: 0,
        color: 0,
        hoist: false,
        managed: false,
        mentionable: false,
        flags: 0,
      },
      {
        id: '101',
        name: 'Speaker',
        permissions: '3145728',
        position: 1,
        color: 0,
        hoist: false,
        managed: false,
        mentionable: false,
        flags: 0,
      },
    ],
    channels: [
      {
        id: '10',
        type: ChannelType.GuildText,
        name: 'chat',
        position: 0,
        parent_id: null,
        permission_overwrites: [{ id: '101', type: 0, allow: '2048', deny: '0' }],
      },
      {
        id: '11',
        type: ChannelType.GuildVoice,
        name: 'Room',
        position: 1,
        parent_id: null,
        bitrate: 64000,
        user_limit: 0,
        rtc_region: null,
        permission_overwrites: [],
      },
      {
        id: '12',
        type: ChannelType.GuildVoice,
        name: 'AFK',
        position: 2,
        parent_id: null,
        bitrate: 64000,
        user_limit: 0,
        rtc_region: null,
        permission_overwrites: [],
      },
    ],
    members: [
      {
        user: BOT,
        roles: ['101'],
        joined_at: '2026-01-01T00:00:00.000Z',
        deaf: false,
        mute: false,
        flags: 0,
      },
      {
        user: { id: '2', username: 'ann', discriminator: '0', global_name: 'Ann', avatar: null },
        nick: 'Annie',
        roles: [],
        joined_at: '2026-01-01T00:00:00.000Z',
        deaf: false,
        mute: false,
        flags: 0,
      },
    ],
    voice_states: [
      {
        user_id: '2',
        channel_id: '11',
        session_id: 'v2',
        deaf: false,
        mute: true,
        self_deaf: false,
        self_mute: true,
        self_video: false,
        suppress: false,
        request_to_speak_timestamp: null,
      },
      {
        user_id: '900',
        channel_id: '11',
        session_id: 'v900',
        deaf: false,
        mute: false,
        self_deaf: true,
        self_mute: false,
        self_video: false,
        suppress: false,
        request_to_speak_timestamp: null,
      },
    ],
  });
  internal.guilds._add({
    id: '200',
    name: 'Another shard',
    owner_id: '1',
    shardId: 0,
    roles: [],
    channels: [],
    members: [],
    voice_states: [],
  });
  return client;
}

describe('a shard cache snapshot', () => {
  it('puts back what Herald needs: the bot, the shard’s servers, channels, roles, overwrites, voice and its members', async () => {
    const snapshot = JSON.parse(JSON.stringify(snapshotShard(clientWithCache(), 1)));
    const fresh = new Client({ intents: [] });
    clients.push(fresh);
    restoreShard(fresh, 1, snapshot);

    expect(fresh.user?.id).toBe('900');
    expect([...fresh.guilds.cache.keys()]).toEqual(['100']);
    const guild = fresh.guilds.cache.get('100') as Guild;
    expect(guild.shardId).toBe(1);
    expect(guild.afkChannelId).toBe('12');
    const room = guild.channels.cache.get('11');
    expect(room?.isVoiceBased() && [...room.members.keys()].sort()).toEqual(['2', '900']);
    expect(guild.voiceStates.cache.get('2')?.serverMute).toBe(true);
    expect(guild.members.cache.get('2')?.displayName).toBe('Annie');
    expect(guild.members.me?.roles.cache.has('101')).toBe(true);
    const chat = guild.channels.cache.get('10');
    expect(chat?.permissionsFor(guild.members.me ?? '900')?.has('SendMessages')).toBe(true);
    expect(fresh.channels.cache.has('12')).toBe(true);
  });
});
