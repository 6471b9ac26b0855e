import { randomBytes } from 'node:crypto';
import { PermissionFlagsBits } from 'discord.js';

/** Every permission bit Discord defines; what Administrator (or ownership) grants. */
export const ALL_PERMISSIONS: bigint = Object.values(PermissionFlagsBits).reduce((acc, bit) => acc | bit, 0n);

const P = PermissionFlagsBits;

/** Discord's default @everyone permissions for a new server (the subset that matters to a bot's users). */
export const DEFAULT_EVERYONE_PERMISSIONS: bigint =
  P.ViewChannel |
  P.CreateInstantInvite |
  P.ChangeNickname |
  P.SendMessages |
  P.SendMessagesInThreads |
  P.EmbedLinks |
  P.AttachFiles |
  P.AddReactions |
  P.UseExternalEmojis |
  P.ReadMessageHistory |
  P.UseApplicationCommands |
  P.Connect |
  P.Speak |
  P.Stream |
  P.UseVAD;

/** What the bot may do in a fresh emulated guild, as if invited with the usual TTS-bot scopes. */
export const DEFAULT_BOT_PERMISSIONS: bigint =
  P.ViewChannel | P.SendMessages | P.EmbedLinks | P.ReadMessageHistory | P.Connect | P.Speak | P.UseVAD;

/** Gateway intent bits the emulator honours. */
export const INTENTS = {
  guilds: 1 << 0,
  guildMembers: 1 << 1,
  guildVoiceStates: 1 << 7,
  guildMessages: 1 << 9,
  messageContent: 1 << 15,
} as const;

// Discord's epoch (2015-01-01); discord.js derives createdAt from it.
const DISCORD_EPOCH = 1_420_070_400_000n;
let increment = 0n;

/** A fresh, time-ordered Discord snowflake. */
export function snowflake(): string {
  increment = (increment + 1n) & 0xfffn;
  return (((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | (1n << 17n) | increment).toString();
}

let lastGuildMs = 0n;

/**
 * A guild id whose timestamp differs from every earlier guild's (one millisecond apart at least), as real guilds,
 * created over years, do: guilds made in one burst then spread over shards (`(id >> 22) % shards`) round-robin.
 */
export function guildSnowflake(): string {
  const now = BigInt(Date.now()) - DISCORD_EPOCH;
  lastGuildMs = now > lastGuildMs ? now : lastGuildMs + 1n;
  increment = (increment + 1n) & 0xfffn;
  return ((lastGuildMs << 22n) | (1n << 17n) | increment).toString();
}

/** A random url-safe string of `bytes` random bytes (interaction tokens, session ids). */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

/** A channel overwrite as Discord stores it: type 0 role, 1 member. */
export interface Overwrite {
  id: string;
  type: 0 | 1;
  allow: bigint;
  deny: bigint;
}

/** A text or voice channel of an emulated guild. */
export interface ChannelState {
  readonly id: string;
  readonly guildId: string;
  readonly name: string;
  readonly type: 'text' | 'voice' | 'stage';
  readonly position: number;
  readonly userLimit: number;
  readonly overwrites: Overwrite[];
}

/** A member of an emulated guild (the bot is one too). */
export interface MemberState {
  readonly id: string;
  readonly name: string;
  readonly nick: string | null;
  readonly bot: boolean;
  readonly roleIds: string[];
  readonly joinedAt: string;
}

/** A role of an emulated guild; the @everyone role's id is the guild's id, as on Discord. */
export interface RoleState {
  readonly id: string;
  readonly name: string;
  permissions: bigint;
  readonly position: number;
  readonly managed: boolean;
}

/** Everything the emulator knows about one guild. */
export interface GuildState {
  readonly id: string;
  readonly name: string;
  readonly ownerId: string;
  readonly roles: RoleState[];
  readonly channels: Map<string, ChannelState>;
  readonly members: Map<string, MemberState>;
  /** user id → voice channel id, for everyone sitting in a voice channel. */
  readonly voice: Map<string, string>;
  readonly botRoleId: string;
  /** False once the bot was removed from the guild. */
  botPresent: boolean;
  /** The voice channel Discord moves idle members to (`afk_channel_id`), if the server has one. */
  afkChannelId?: string | null;
  /** Members a moderator server-muted (their voice state's `mute`). */
  serverMuted?: Set<string>;
  /** Members sitting in a stage's audience (their voice state's `suppress`). */
  suppressed?: Set<string>;
  /** Members on a stage who asked to speak, and when (`request_to_speak_timestamp`). */
  requestToSpeak?: Map<string, string>;
}

/** The bot's own user, as the emulator presents it. */
export interface BotUser {
  readonly id: string;
  readonly name: string;
}

/** Permissions of `member` before channel overwrites, computed as Discord does. */
export function basePermissions(guild: GuildState, member: MemberState): bigint {
  if (guild.ownerId === member.id) return ALL_PERMISSIONS;
  // Simplification (documented in index.ts): the bot's guild permissions are exactly its role's, so a test can
  // take a permission away guild-wide even though @everyone grants it.
  let perms = member.id === botMemberId(guild) ? 0n : roleById(guild, guild.id).permissions;
  for (const roleId of member.roleIds) perms |= roleById(guild, roleId).permissions;
  return perms & P.Administrator ? ALL_PERMISSIONS : perms;
}

/** Permissions of `member` in `channel`: base, then @everyone, role and member overwrites (Discord's order). */
export function channelPermissions(guild: GuildState, member: MemberState, channel: ChannelState): bigint {
  let perms = basePermissions(guild, member);
  if (perms & P.Administrator) return ALL_PERMISSIONS;
  const everyone = channel.overwrites.find((o) => o.type === 0 && o.id === guild.id);
  if (everyone) perms = (perms & ~everyone.deny) | everyone.allow;
  let allow = 0n;
  let deny = 0n;
  for (const o of channel.overwrites) {
    if (o.type === 0 && o.id !== guild.id && member.roleIds.includes(o.id)) {
      allow |= o.allow;
      deny |= o.deny;
    }
  }
  perms = (perms & ~deny) | allow;
  const own = channel.overwrites.find((o) => o.type === 1 && o.id === member.id);
  if (own) perms = (perms & ~own.deny) | own.allow;
  // Without ViewChannel nothing else in the channel is usable, as on Discord.
  return perms & P.ViewChannel ? perms : 0n;
}

function roleById(guild: GuildState, id: string): RoleState {
  const role = guild.roles.find((r) => r.id === id);
  if (!role) throw new Error(`unknown role ${id} in guild ${guild.id}`);
  return role;
}

function botMemberId(guild: GuildState): string | undefined {
  for (const member of guild.members.values()) if (member.roleIds.includes(guild.botRoleId)) return member.id;
  return undefined;
}

/** A Discord user object. */
export function userPayload(member: Pick<MemberState, 'id' | 'name' | 'bot'>): Record<string, unknown> {
  return {
    id: member.id,
    username: member.name,
    discriminator: '0',
    global_name: member.bot ? null : member.name,
    avatar: null,
    bot: member.bot,
    system: false,
    public_flags: 0,
  };
}

/** A guild member object, with the user unless `withUser` is false (as in `resolved.members`). */
export function memberPayload(member: MemberState, withUser = true): Record<string, unknown> {
  return {
    ...(withUser ? { user: userPayload(member) } : {}),
    nick: member.nick,
    avatar: null,
    roles: [...member.roleIds],
    joined_at: member.joinedAt,
    premium_since: null,
    deaf: false,
    mute: false,
    flags: 0,
    pending: false,
    communication_disabled_until: null,
  };
}

/** A guild channel object (type 0 text, 2 voice, 13 stage). */
export function channelPayload(channel: ChannelState): Record<string, unknown> {
  return {
    id: channel.id,
    type: { text: 0, voice: 2, stage: 13 }[channel.type],
    guild_id: channel.guildId,
    name: channel.name,
    position: channel.position,
    parent_id: null,
    nsfw: false,
    permission_overwrites: channel.overwrites.map((o) => ({
      id: o.id,
      type: o.type,
      allow: o.allow.toString(),
      deny: o.deny.toString(),
    })),
    ...(channel.type === 'text'
      ? { topic: null, rate_limit_per_user: 0, last_message_id: null }
      : { bitrate: 64_000, user_limit: channel.userLimit, rtc_region: null, rate_limit_per_user: 0 }),
  };
}

/** A voice state object for `userId` in `channelId` (null: left). */
export function voiceStatePayload(
  guild: GuildState,
  member: MemberState,
  channelId: string | null,
  sessionId: string,
  selfDeaf = false,
): Record<string, unknown> {
  return {
    guild_id: guild.id,
    channel_id: channelId,
    user_id: member.id,
    member: memberPayload(member),
    session_id: sessionId,
    deaf: false,
    mute: guild.serverMuted?.has(member.id) ?? false,
    self_deaf: selfDeaf,
    self_mute: false,
    self_video: false,
    suppress: guild.suppressed?.has(member.id) ?? false,
    request_to_speak_timestamp: guild.requestToSpeak?.get(member.id) ?? null,
  };
}

/** The GUILD_CREATE payload of `guild`, as the bot sees it. */
export function guildCreatePayload(
  guild: GuildState,
  voiceSessionOf: (userId: string, guildId: string) => string,
): object {
  const members = [...guild.members.values()];
  return {
    id: guild.id,
    name: guild.name,
    icon: null,
    splash: null,
    discovery_splash: null,
    banner: null,
    description: null,
    owner_id: guild.ownerId,
    afk_channel_id: guild.afkChannelId ?? null,
    afk_timeout: 300,
    verification_level: 0,
    default_message_notifications: 0,
    explicit_content_filter: 0,
    mfa_level: 0,
    nsfw_level: 0,
    premium_tier: 0,
    premium_subscription_count: 0,
    premium_progress_bar_enabled: false,
    preferred_locale: 'en-US',
    system_channel_id: null,
    system_channel_flags: 0,
    rules_channel_id: null,
    public_updates_channel_id: null,
    safety_alerts_channel_id: null,
    vanity_url_code: null,
    application_id: null,
    features: [],
    emojis: [],
    stickers: [],
    max_video_channel_users: 25,
    roles: guild.roles.map((role) => ({
      id: role.id,
      name: role.name,
      color: 0,
      colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
      hoist: false,
      icon: null,
      unicode_emoji: null,
      position: role.position,
      permissions: role.permissions.toString(),
      managed: role.managed,
      mentionable: false,
      flags: 0,
    })),
    joined_at: new Date().toISOString(),
    large: false,
    unavailable: false,
    member_count: members.length,
    members: members.map((m) => memberPayload(m)),
    channels: [...guild.channels.values()].map(channelPayload),
    voice_states: [...guild.voice].flatMap(([userId, channelId]) => {
      const member = guild.members.get(userId);
      if (!member) return [];
      const { guild_id: _omitted, ...state } = voiceStatePayload(
        guild,
        member,
        channelId,
        voiceSessionOf(userId, guild.id),
      );
      return [state];
    }),
    threads: [],
    presences: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
  };
}
