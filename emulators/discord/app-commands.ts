/**
 * Message commands (right-click a message → Apps: interaction type 2, command type 3, `target_id`,
 * `resolved.messages`) and interactions of Herald installed to a member's account (`authorizing_integration_owners`
 * with the user-install key 1; context 0 a server, 1 the DM with the app, 2 another DM), which may come from where
 * the bot is not: a DM, or a server it was never added to. Also `GET /channels/:id/messages/:id`.
 */
import { PermissionFlagsBits } from 'discord.js';
import { type Interactions, newInteractionRecord } from './interactions.ts';
import type { Messages } from './messages.ts';
import {
  type ChannelState,
  channelPayload,
  channelPermissions,
  DEFAULT_EVERYONE_PERMISSIONS,
  type GuildState,
  memberPayload,
  snowflake,
  userPayload,
} from './model.ts';
import { apiError, type Route } from './rest.ts';
import type { Context, InteractionRecord } from './state.ts';
import type { Channel, Member, Reply, SentMessage } from './types.ts';

/** Interaction contexts (Discord's InteractionContextType). */
const CONTEXT = { guild: 0, botDm: 1, privateChannel: 2 } as const;
/** Installation contexts (Discord's ApplicationIntegrationType): the keys of `authorizing_integration_owners`. */
const INSTALL = { guild: '0', user: '1' } as const;

const P = PermissionFlagsBits;
/** What an app may do in a DM (`app_permissions` there): post, attach, and send voice messages. */
const DM_APP_PERMISSIONS =
  P.ViewChannel |
  P.SendMessages |
  P.EmbedLinks |
  P.AttachFiles |
  P.ReadMessageHistory |
  P.UseExternalEmojis |
  P.SendVoiceMessages;

/** Where a user-installed command is used: a DM (with the app, or another), or a channel of a server. */
export type UserInstallPlace = { readonly dm: 'bot' | 'private' } | { readonly channel: Channel };

/** Options of {@link AppCommands.userInstalledSlash}. */
export interface UserInstalledSlashOptions {
  readonly timeoutMs?: number;
  /**
   * The app's permissions there (`app_permissions`); default in a DM what an app may do in one, in a server
   * @everyone's there (a user-installed app acts with the permissions everyone has).
   */
  readonly appPermissions?: bigint;
}

/** Builds the drivers and the route; `remember` is told every member message the emulator dispatches. */
export function createAppCommands(ctx: Context, m: Messages, i: Interactions) {
  const { messages, interactions, guildOf, memberOf, channelOf, findChannel, applicationId } = ctx;
  const { findCommand } = i;
  // Members' messages as MESSAGE_CREATE carried them: a message command resolves its target to exactly this.
  const dispatched = new Map<string, Record<string, unknown>>();

  const remember = (payload: Record<string, unknown>): void => {
    dispatched.set(String(payload.id), payload);
  };

  const payloadOf = (messageId: string): Record<string, unknown> | undefined => {
    const record = messages.get(messageId);
    if (!record || record.deleted) return undefined;
    return dispatched.get(messageId) ?? m.messagePayload(record);
  };

  /** `member` right-clicks `message` → Apps → `command`; resolves to the answer. */
  const messageCommand = (
    member: Member,
    message: SentMessage,
    command: string,
    o: { timeoutMs?: number } = {},
  ): Promise<Reply> => {
    const guild = guildOf(member.guildId);
    const channel = guild.channels.get(message.channelId);
    const target = payloadOf(message.id);
    if (!channel || !target) throw new Error(`discord emulator: message ${message.id} is gone`);
    const definition = findCommand(guild.id, command);
    const { record, payload } = i.interactionBase(member, channel, 2, undefined);
    Object.assign(record, { name: `message command ${command}` });
    payload.data = {
      id: definition?.id ?? snowflake(),
      name: command,
      type: 3,
      guild_id: guild.id,
      target_id: message.id,
      resolved: { messages: { [message.id]: target } },
    };
    return i.run(record, payload, o.timeoutMs ?? 15_000);
  };

  /** The DM between `member`'s user and the app (or another user), made once per user and kind. */
  const dms = new Map<string, { guild: GuildState; channel: ChannelState }>();
  const dmOf = (member: Member, kind: 'bot' | 'private'): { guild: GuildState; channel: ChannelState } => {
    const key = `${member.id}:${kind}`;
    const known = dms.get(key);
    if (known) return known;
    const id = snowflake();
    const channel: ChannelState = {
      id,
      guildId: id,
      name: '',
      type: 'text',
      position: 0,
      userLimit: 0,
      overwrites: [],
    };
    // A DM is no guild: this stand-in only carries the channel, and is in no list, so its messages have no guild_id.
    const guild: GuildState = {
      id,
      name: 'DM',
      ownerId: member.id,
      roles: [],
      channels: new Map([[id, channel]]),
      members: new Map([[member.id, memberOf(member)]]),
      voice: new Map(),
      botRoleId: '',
      botPresent: false,
    };
    dms.set(key, { guild, channel });
    return { guild, channel };
  };

  /** An interaction of `member`'s, from Herald installed to their account, with `data` for `/command`. */
  const userInstallInteraction = (
    member: Member,
    type: 2 | 4,
    command: string,
    values: Record<string, string | number | boolean>,
    place: UserInstallPlace,
    o: UserInstalledSlashOptions & { focused?: string },
  ): { record: InteractionRecord; payload: Record<string, unknown> } => {
    const user = memberOf(member);
    const inDm = 'dm' in place;
    const { guild, channel } = inDm ? dmOf(member, place.dm) : where(place.channel);
    const appPermissions =
      o.appPermissions ?? (inDm ? DM_APP_PERMISSIONS : everyonePermissions(guild, channel));
    const record = newInteractionRecord({
      type,
      guild,
      channel,
      name: `/${command} (user install)`,
      appPermissions,
    });
    const definition = inDm ? findCommand('', command) : findCommand(guild.id, command);
    const built = i.buildOptions(guild, channel, definition, values, undefined, o.focused);
    const context = inDm ? (place.dm === 'bot' ? CONTEXT.botDm : CONTEXT.privateChannel) : CONTEXT.guild;
    const payload: Record<string, unknown> = {
      id: record.id,
      application_id: applicationId,
      type,
      token: record.token,
      version: 1,
      channel_id: channel.id,
      app_permissions: appPermissions.toString(),
      locale: 'en-US',
      entitlements: [],
      // Installed to the user only (the key 0 would name the guild the app was added to).
      authorizing_integration_owners: { [INSTALL.user]: user.id },
      context,
      attachment_size_limit: 10_485_760,
      data: {
        id: definition?.id ?? snowflake(),
        name: command,
        type: 1,
        options: built.options,
      },
      ...(inDm
        ? {
            channel: { id: channel.id, type: 1, recipients: [userPayload(user)] },
            user: userPayload(user),
          }
        : {
            guild_id: guild.id,
            guild_locale: 'en-US',
            channel: { ...channelPayload(channel), permissions: appPermissions.toString() },
            member: {
              ...memberPayload(user),
              permissions: channelPermissions(guild, user, channel).toString(),
            },
          }),
    };
    return { record, payload };
  };

  /**
   * `member` runs `/command` from Herald installed to their account: in a DM, or in a server channel (any, the bot
   * there or not). Resolves to the answer.
   */
  const userInstalledSlash = (
    member: Member,
    command: string,
    values: Record<string, string | number | boolean>,
    place: UserInstallPlace,
    o: UserInstalledSlashOptions = {},
  ): Promise<Reply> => {
    const { record, payload } = userInstallInteraction(member, 2, command, values, place, o);
    return i.run(record, payload, o.timeoutMs ?? 15_000);
  };

  /** `member` types into `focused` of a user-installed `/command`; resolves to the choices the bot offered. */
  const userInstalledAutocomplete = (
    member: Member,
    command: string,
    values: Record<string, string | number>,
    focused: string,
    place: UserInstallPlace,
  ): Promise<{ name: string; value: string | number }[]> => {
    const { record, payload } = userInstallInteraction(member, 4, command, values, place, { focused });
    Object.assign(record, { name: `autocomplete of /${command} ${focused} (user install)` });
    interactions.set(record.token, record);
    ctx.gateway.dispatch('INTERACTION_CREATE', payload);
    return ctx.waitFor(`choices for ${focused}`, ctx.interactionResponseMs, () => record.choices);
  };

  const where = (channel: Channel): { guild: GuildState; channel: ChannelState } => {
    const state = channelOf(channel);
    return { guild: guildOf(state.guildId), channel: state };
  };

  /** @everyone's permissions in `channel` (its overwrite for @everyone applied). */
  const everyonePermissions = (guild: GuildState, channel: ChannelState): bigint => {
    const everyone =
      guild.roles.find((role) => role.id === guild.id)?.permissions ?? DEFAULT_EVERYONE_PERMISSIONS;
    const overwrite = channel.overwrites.find((o) => o.type === 0 && o.id === guild.id);
    const perms = overwrite ? (everyone & ~overwrite.deny) | overwrite.allow : everyone;
    return perms & P.ViewChannel ? perms : 0n;
  };

  const routes: Route[] = [
    {
      method: 'GET',
      pattern: /^\/channels\/(\d+)\/messages\/(\d+)$/,
      bot: true,
      handle: (_call, [channelId = '', messageId = '']) => {
        const found = findChannel(channelId);
        if (!found?.guild.botPresent) return apiError(404, 10003, 'Unknown Channel');
        const payload = payloadOf(messageId);
        return payload && payload.channel_id === channelId
          ? { status: 200, body: payload }
          : apiError(404, 10008, 'Unknown Message');
      },
    },
  ];

  return { remember, messageCommand, userInstalledSlash, userInstalledAutocomplete, routes };
}

/** What {@link createAppCommands} returns. */
export type AppCommands = ReturnType<typeof createAppCommands>;
