import { PermissionFlagsBits } from 'discord.js';
import type { Owns } from './gateway.ts';
import {
  ALL_PERMISSIONS,
  type ChannelState,
  channelPayload,
  channelPermissions,
  DEFAULT_BOT_PERMISSIONS,
  DEFAULT_EVERYONE_PERMISSIONS,
  type GuildState,
  guildCreatePayload,
  guildSnowflake,
  INTENTS,
  type MemberState,
  memberPayload,
  randomToken,
  snowflake,
  voiceStatePayload,
} from './model.ts';
import { seatOnStage, setSuppressed } from './stage.ts';
import type { Context } from './state.ts';
import type { Channel, Guild, Member } from './types.ts';

/** Guilds as tests build them, and voice states: who sits where, and the bot joining, moving, leaving. */
export function createGuilds(ctx: Context) {
  const {
    guilds,
    handles,
    voiceSessions,
    voiceRequests,
    flags,
    botUser,
    gateway,
    voice,
    dave,
    notify,
    memberOf,
    channelOf,
    botMember,
  } = ctx;
  /** A member's voice session id; the bot's is the gateway session of the shard owning `guildId`. */
  const voiceSessionOf = (userId: string, guildId: string): string => {
    if (userId === botUser.id) return gateway.sessionId(guildId) ?? 'none';
    let id = voiceSessions.get(userId);
    if (!id) {
      id = randomToken(16);
      voiceSessions.set(userId, id);
    }
    return id;
  };
  /** The bot has a ready session on the shard that owns the guild. */
  const botConnected = (guildId: string): boolean => gateway.isReady(guildId);

  const dispatchVoiceState = (guild: GuildState, member: MemberState, channelId: string | null): void => {
    const previous = guild.voice.get(member.id);
    seatOnStage(guild, member.id, previous, channelId);
    if (channelId) guild.voice.set(member.id, channelId);
    else guild.voice.delete(member.id);
    // Every member in a voice channel is a DAVE listener in that channel's call.
    for (const changed of new Set([previous, channelId])) {
      if (changed) dave.setOccupants(changed, occupants(guild, changed));
    }
    if (member.id === botUser.id) dave.setBotChannel(guild.id, channelId);
    gateway.dispatch(
      'VOICE_STATE_UPDATE',
      voiceStatePayload(
        guild,
        member,
        channelId,
        voiceSessionOf(member.id, guild.id),
        member.id === botUser.id,
      ),
      INTENTS.guildVoiceStates,
    );
  };

  const occupants = (guild: GuildState, channelId: string): string[] =>
    [...guild.voice].filter(([, c]) => c === channelId).map(([userId]) => userId);

  const isFullFor = (guild: GuildState, channel: ChannelState, member: MemberState): boolean => {
    const others = occupants(guild, channel.id).filter((id) => id !== member.id);
    const canMove = (channelPermissions(guild, member, channel) & PermissionFlagsBits.MoveMembers) !== 0n;
    return channel.userLimit > 0 && others.length >= channel.userLimit && !canMove;
  };

  /** The bot's op 4. Discord answers nothing at all to a join it refuses (no permission, channel full). */
  const onBotVoiceState = (d: { guild_id: string; channel_id: string | null }): void => {
    const granted = grantVoiceState(d);
    voiceRequests.push({ guildId: d.guild_id, channelId: d.channel_id, granted, at: Date.now() });
    notify();
  };

  const grantVoiceState = (d: { guild_id: string; channel_id: string | null }): boolean => {
    const guild = guilds.get(d.guild_id);
    if (!guild?.botPresent) return false;
    const bot = botMember(guild);
    if (d.channel_id === null) {
      dispatchVoiceState(guild, bot, null);
      voice.release(guild.id);
      return true;
    }
    const channel = guild.channels.get(d.channel_id);
    if (channel?.type !== 'voice' && channel?.type !== 'stage') return false;
    const perms = channelPermissions(guild, bot, channel);
    const needed = PermissionFlagsBits.ViewChannel | PermissionFlagsBits.Connect;
    if ((perms & needed) !== needed || isFullFor(guild, channel, bot)) return false;
    dispatchVoiceState(guild, bot, channel.id);
    if (flags.refuseVoiceJoin) return false;
    // VOICE_STATE_UPDATE first: in the other order the library never leaves `signalling`.
    const voiceToken = voice.allocate(guild.id, bot.id, voiceSessionOf(bot.id, guild.id), channel.id);
    gateway.dispatch('VOICE_SERVER_UPDATE', {
      token: voiceToken,
      guild_id: guild.id,
      endpoint: voice.endpoint,
    });
    return true;
  };

  const disconnectBotVoice = (guild: GuildState): void => {
    // 4014: disconnected (kicked, moved out, channel deleted); the library does not rejoin on its own.
    voice.closeSocket(guild.id, 4014, 'Disconnected.');
    voice.release(guild.id);
  };

  const createGuild = (g: { name: string }): Guild => {
    const id = guildSnowflake();
    const botRoleId = snowflake();
    const state: GuildState = {
      id,
      name: g.name,
      ownerId: snowflake(),
      roles: [
        { id, name: '@everyone', permissions: DEFAULT_EVERYONE_PERMISSIONS, position: 0, managed: false },
        {
          id: botRoleId,
          name: botUser.name,
          permissions: DEFAULT_BOT_PERMISSIONS,
          position: 1,
          managed: true,
        },
      ],
      channels: new Map(),
      members: new Map(),
      voice: new Map(),
      botRoleId,
      botPresent: true,
    };
    state.members.set(botUser.id, {
      id: botUser.id,
      name: botUser.name,
      nick: null,
      bot: true,
      roleIds: [botRoleId],
      joinedAt: new Date().toISOString(),
    });
    guilds.set(id, state);
    const handle = guildHandle(state);
    handles.set(id, handle);
    if (botConnected(id)) gateway.dispatch('GUILD_CREATE', guildCreatePayload(state, voiceSessionOf));
    return handle;
  };

  const guildHandle = (guild: GuildState): Guild => {
    const addChannel = (
      name: string,
      type: ChannelState['type'],
      userLimit: number,
      deny: bigint,
    ): Channel => {
      const channel: ChannelState = {
        id: snowflake(),
        guildId: guild.id,
        name,
        type,
        position: guild.channels.size,
        userLimit,
        overwrites: deny ? [{ id: botUser.id, type: 1, allow: 0n, deny }] : [],
      };
      guild.channels.set(channel.id, channel);
      if (botConnected(guild.id) && guild.botPresent) {
        gateway.dispatch('CHANNEL_CREATE', channelPayload(channel), INTENTS.guilds);
      }
      return { id: channel.id, name, type, guildId: guild.id };
    };
    const bot: Member = { id: botUser.id, name: botUser.name, guildId: guild.id };
    return {
      id: guild.id,
      name: guild.name,
      bot,
      addTextChannel: (name) => addChannel(name, 'text', 0, 0n),
      addVoiceChannel: (name, v) =>
        addChannel(name, 'voice', v?.userLimit ?? 0, v?.deny?.botPermissions ?? 0n),
      addStageChannel: (name) => addChannel(name, 'stage', 0, 0n),
      inviteToSpeak: (member) => {
        setSuppressed(guild, memberOf(member), false, dispatchVoiceState);
        notify();
      },
      addMember: (m) => {
        const member: MemberState = {
          id: m.id ?? snowflake(),
          name: m.name,
          nick: m.nick ?? null,
          bot: m.bot ?? false,
          roleIds: [],
          joinedAt: new Date().toISOString(),
        };
        if (m.permissions !== undefined) {
          const roleId = snowflake();
          guild.roles.push({
            id: roleId,
            name: `${m.name}'s role`,
            permissions: m.permissions,
            position: guild.roles.length,
            managed: false,
          });
          member.roleIds.push(roleId);
          if (botConnected(guild.id) && guild.botPresent) {
            const role = guild.roles.at(-1);
            gateway.dispatch(
              'GUILD_ROLE_CREATE',
              { guild_id: guild.id, role: { ...role, permissions: m.permissions.toString() } },
              INTENTS.guilds,
            );
          }
        }
        guild.members.set(member.id, member);
        if (botConnected(guild.id) && guild.botPresent) {
          gateway.dispatch(
            'GUILD_MEMBER_ADD',
            { guild_id: guild.id, ...memberPayload(member) },
            INTENTS.guildMembers,
          );
        }
        return { id: member.id, name: member.name, guildId: guild.id };
      },
      setBotPermissions: (permissions, channel) => {
        if (!channel) {
          const role = guild.roles.find((r) => r.id === guild.botRoleId);
          if (role) role.permissions = permissions;
          if (role && botConnected(guild.id) && guild.botPresent) {
            gateway.dispatch(
              'GUILD_ROLE_UPDATE',
              {
                guild_id: guild.id,
                role: {
                  id: role.id,
                  name: role.name,
                  color: 0,
                  hoist: false,
                  position: role.position,
                  permissions: permissions.toString(),
                  managed: true,
                  mentionable: false,
                  flags: 0,
                },
              },
              INTENTS.guilds,
            );
          }
          return;
        }
        const state = channelOf(channel);
        const others = state.overwrites.filter((w) => !(w.type === 1 && w.id === botUser.id));
        state.overwrites.splice(0, state.overwrites.length, ...others, {
          id: botUser.id,
          type: 1,
          allow: permissions,
          deny: ALL_PERMISSIONS & ~permissions,
        });
        if (botConnected(guild.id) && guild.botPresent) {
          gateway.dispatch('CHANNEL_UPDATE', channelPayload(state), INTENTS.guilds);
        }
      },
      joinVoice: (member, channel) => {
        const state = channelOf(channel);
        const who = memberOf(member);
        if (state.type === 'text')
          throw new Error(`discord emulator: ${channel.name} is not a voice channel`);
        if (isFullFor(guild, state, who))
          throw new Error(`discord emulator: ${channel.name} is full for ${member.name}`);
        dispatchVoiceState(guild, who, state.id);
      },
      leaveVoice: (member) => dispatchVoiceState(guild, memberOf(member), null),
      moveBot: (channel) => {
        const self = botMember(guild);
        if (!channel) {
          dispatchVoiceState(guild, self, null);
          disconnectBotVoice(guild);
          notify();
          return;
        }
        const state = channelOf(channel);
        dispatchVoiceState(guild, self, state.id);
        // The old voice socket goes with 4014 after the new server is announced, as when an admin drags a bot.
        voice.closeSocket(guild.id, 4014, 'Disconnected.');
        const voiceToken = voice.allocate(guild.id, self.id, voiceSessionOf(self.id, guild.id), state.id);
        gateway.dispatch('VOICE_SERVER_UPDATE', {
          token: voiceToken,
          guild_id: guild.id,
          endpoint: voice.endpoint,
        });
        notify();
      },
      deleteChannel: (channel) => {
        const state = channelOf(channel);
        for (const userId of occupants(guild, state.id)) {
          const member = guild.members.get(userId);
          if (member) dispatchVoiceState(guild, member, null);
          if (userId === botUser.id) disconnectBotVoice(guild);
        }
        guild.channels.delete(state.id);
        // Discord clears a guild's AFK channel when that channel is deleted.
        if (guild.afkChannelId === state.id) guild.afkChannelId = null;
        gateway.dispatch('CHANNEL_DELETE', channelPayload(state), INTENTS.guilds);
        notify();
      },
      removeBot: () => {
        disconnectBotVoice(guild);
        guild.voice.delete(botUser.id);
        guild.botPresent = false;
        gateway.dispatch('GUILD_DELETE', { id: guild.id });
        notify();
      },
      serverMute: (member, muted) => {
        const who = memberOf(member);
        guild.serverMuted ??= new Set();
        if (muted) guild.serverMuted.add(who.id);
        else guild.serverMuted.delete(who.id);
        const channelId = guild.voice.get(who.id);
        if (channelId) dispatchVoiceState(guild, who, channelId);
        notify();
      },
      setAfkChannel: (channel) => {
        guild.afkChannelId = channel === null ? null : channelOf(channel).id;
        if (botConnected(guild.id) && guild.botPresent) {
          gateway.dispatch('GUILD_UPDATE', guildCreatePayload(guild, voiceSessionOf), INTENTS.guilds);
        }
        notify();
      },
      inviteBot: () => {
        if (guild.botPresent) return;
        guild.botPresent = true;
        if (botConnected(guild.id))
          gateway.dispatch('GUILD_CREATE', guildCreatePayload(guild, voiceSessionOf));
        notify();
      },
      botVoiceChannelId: () => guild.voice.get(botUser.id) ?? null,
      voiceFlags: (member) => {
        const who = memberOf(member);
        return {
          muted: guild.serverMuted?.has(who.id) ?? false,
          suppressed: guild.suppressed?.has(who.id) ?? false,
          requestedToSpeak: guild.requestToSpeak?.has(who.id) ?? false,
        };
      },
      voiceMembers: (channel) => occupants(guild, channel.id),
    };
  };

  /** The GUILD_CREATEs that follow READY, for the guilds of the new session's shard. */
  const afterReady = (owns: Owns, send: (event: string, data: unknown) => void): void => {
    for (const guild of guilds.values()) {
      if (guild.botPresent && owns(guild.id)) send('GUILD_CREATE', guildCreatePayload(guild, voiceSessionOf));
    }
  };

  return {
    afterReady,
    voiceSessionOf,
    botConnected,
    dispatchVoiceState,
    occupants,
    isFullFor,
    onBotVoiceState,
    disconnectBotVoice,
    createGuild,
  };
}

/** What {@link createGuilds} returns. */
export type Guilds = ReturnType<typeof createGuilds>;
