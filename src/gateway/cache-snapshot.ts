import {
  ChannelType,
  type Client,
  ClientApplication,
  ClientUser,
  type Guild,
  type GuildBasedChannel,
  type GuildMember,
  type Role,
  type User,
  type VoiceState,
} from 'discord.js';

/**
 * What a shard's cache held at a planned stop, in the gateway's own (raw) shapes: the bot, its application and each
 * server as GUILD_CREATE gives it. A RESUME brings no READY and no GUILD_CREATE, only the events missed meanwhile,
 * so a restarted process puts this back into discord.js's cache first and then applies the replayed events to it.
 * Members are kept only where Herald needs them: itself and whoever is in a voice channel.
 */
export interface CacheSnapshot {
  readonly user: RawObject;
  readonly application: RawObject | null;
  readonly guilds: readonly RawObject[];
}

type RawObject = Record<string, unknown>;

const THREAD_TYPES = new Set([
  ChannelType.PublicThread,
  ChannelType.PrivateThread,
  ChannelType.AnnouncementThread,
]);

/** The shard's part of `client`'s cache, raw. @throws when the client never logged in. */
export function snapshotShard(client: Client, shardId: number): CacheSnapshot {
  if (!client.user) throw new Error('The client has no user to snapshot: it never logged in.');
  return {
    user: rawUser(client.user),
    application: client.application
      ? { id: client.application.id, flags: client.application.flags.bitfield }
      : null,
    guilds: [...client.guilds.cache.values()]
      .filter((guild) => guild.shardId === shardId && guild.available)
      .map(rawGuild),
  };
}

/**
 * Puts a snapshot into discord.js's cache for `shardId`, as READY and GUILD_CREATE would have (discord.js's own
 * handlers do the same `_add`). Goes through discord.js internals that its typings hide; they are named in
 * {@link ClientCacheInternals}.
 */
export function restoreShard(client: Client, shardId: number, snapshot: CacheSnapshot): void {
  const internal = client as unknown as ClientCacheInternals;
  if (!client.user) {
    // Constructed as discord.js's READY handler constructs them; both classes are exported, their constructors
    // are not typed as public.
    const user = new (ClientUser as unknown as new (c: Client, d: RawObject) => ClientUser)(
      client,
      snapshot.user,
    );
    internal.user = user;
    client.users.cache.set(user.id, user);
  }
  if (!client.application && snapshot.application) {
    internal.application = new (
      ClientApplication as unknown as new (
        c: Client,
        d: RawObject,
      ) => ClientApplication
    )(client, snapshot.application);
  }
  for (const guild of snapshot.guilds) internal.guilds._add({ ...guild, shardId });
}

/** The discord.js internals {@link restoreShard} writes to (READY's and GUILD_CREATE's handlers do the same). */
interface ClientCacheInternals {
  user: ClientUser | null;
  application: ClientApplication | null;
  readonly guilds: { _add(data: RawObject): Guild };
}

function rawUser(user: User): RawObject {
  return {
    id: user.id,
    username: user.username,
    global_name: user.globalName,
    discriminator: user.discriminator,
    avatar: user.avatar,
    bot: user.bot,
    flags: user.flags?.bitfield ?? 0,
  };
}

function rawGuild(guild: Guild): RawObject {
  const channels = [...guild.channels.cache.values()];
  const voiceStates = [...guild.voiceStates.cache.values()].filter((state) => state.channelId !== null);
  const memberIds = new Set([...voiceStates.map((state) => state.id), guild.client.user.id]);
  const members = [...memberIds]
    .map((id) => guild.members.cache.get(id))
    .filter((member): member is GuildMember => member !== undefined);
  return {
    id: guild.id,
    name: guild.name,
    icon: guild.icon,
    owner_id: guild.ownerId,
    afk_channel_id: guild.afkChannelId,
    afk_timeout: guild.afkTimeout,
    system_channel_id: guild.systemChannelId,
    preferred_locale: guild.preferredLocale,
    features: guild.features,
    member_count: guild.memberCount,
    large: guild.large,
    joined_at: iso(guild.joinedTimestamp),
    unavailable: false,
    roles: [...guild.roles.cache.values()].map(rawRole),
    channels: channels.filter((channel) => !THREAD_TYPES.has(channel.type)).map(rawChannel),
    threads: channels.filter((channel) => THREAD_TYPES.has(channel.type)).map(rawChannel),
    members: members.map(rawMember),
    voice_states: voiceStates.map(rawVoiceState),
  };
}

function rawRole(role: Role): RawObject {
  return {
    id: role.id,
    name: role.name,
    color: role.color,
    hoist: role.hoist,
    position: role.rawPosition,
    permissions: role.permissions.bitfield.toString(),
    managed: role.managed,
    mentionable: role.mentionable,
    flags: role.flags.bitfield,
    icon: role.icon,
    unicode_emoji: role.unicodeEmoji,
  };
}

function rawChannel(channel: GuildBasedChannel): RawObject {
  const raw: RawObject = {
    id: channel.id,
    type: channel.type,
    name: channel.name,
    guild_id: channel.guildId,
    parent_id: channel.parentId,
  };
  if ('rawPosition' in channel) raw.position = channel.rawPosition;
  if ('permissionOverwrites' in channel) {
    raw.permission_overwrites = [...channel.permissionOverwrites.cache.values()].map((overwrite) => ({
      id: overwrite.id,
      type: overwrite.type,
      allow: overwrite.allow.bitfield.toString(),
      deny: overwrite.deny.bitfield.toString(),
    }));
  }
  if ('bitrate' in channel) {
    raw.bitrate = channel.bitrate;
    raw.user_limit = channel.userLimit;
    raw.rtc_region = channel.rtcRegion;
  }
  if ('topic' in channel) raw.topic = channel.topic;
  if ('nsfw' in channel) raw.nsfw = channel.nsfw;
  if ('rateLimitPerUser' in channel) raw.rate_limit_per_user = channel.rateLimitPerUser;
  if (channel.isThread()) {
    raw.owner_id = channel.ownerId;
    raw.thread_metadata = {
      archived: channel.archived ?? false,
      locked: channel.locked ?? false,
      auto_archive_duration: channel.autoArchiveDuration,
      archive_timestamp: iso(channel.archiveTimestamp) ?? new Date(0).toISOString(),
    };
  }
  return raw;
}

function rawMember(member: GuildMember): RawObject {
  return {
    user: rawUser(member.user),
    nick: member.nickname,
    avatar: member.avatar,
    roles: [...member.roles.cache.keys()].filter((id) => id !== member.guild.id),
    joined_at: iso(member.joinedTimestamp),
    deaf: member.voice.serverDeaf ?? false,
    mute: member.voice.serverMute ?? false,
    pending: member.pending,
    communication_disabled_until: iso(member.communicationDisabledUntilTimestamp),
    flags: member.flags.bitfield,
  };
}

function rawVoiceState(state: VoiceState): RawObject {
  return {
    user_id: state.id,
    channel_id: state.channelId,
    session_id: state.sessionId,
    deaf: state.serverDeaf ?? false,
    mute: state.serverMute ?? false,
    self_deaf: state.selfDeaf ?? false,
    self_mute: state.selfMute ?? false,
    self_video: state.selfVideo ?? false,
    self_stream: state.streaming ?? false,
    suppress: state.suppress,
    request_to_speak_timestamp: iso(state.requestToSpeakTimestamp),
  };
}

/** An epoch-milliseconds time as the gateway writes it, or null when discord.js has none (or not a number). */
function iso(ms: number | null | undefined): string | null {
  return typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}
