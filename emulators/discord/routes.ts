import { PermissionFlagsBits } from 'discord.js';
import { uploadRefusal } from './attachments.ts';
import type { Interactions } from './interactions.ts';
import { messageLimitRefusal } from './limits.ts';
import type { Messages } from './messages.ts';
import { channelPayload, channelPermissions, memberPayload, snowflake, userPayload } from './model.ts';
import { apiError, type RestCall, type RestResponse, type Route } from './rest.ts';
import type { Context } from './state.ts';
import type { Json } from './types.ts';

/** What `GET /gateway/bot` reports. */
export interface GatewayInfo {
  readonly gateway: () => string;
  /** The recommended shard count. */
  readonly shards: () => number;
  /** IDENTIFYs so far, counted against `session_start_limit.total`. */
  readonly identifies: () => number;
  readonly maxConcurrency: number;
}

/** Sessions a bot may start per day, as Discord reports for an ordinary bot. */
const SESSION_STARTS_PER_DAY = 1000;

/** The REST routes the bot calls (discord-protocol.md §3). */
export function createRoutes(ctx: Context, m: Messages, i: Interactions, urls: GatewayInfo) {
  const { guilds, messages, posted, commands, applicationId, botUser, notify, findChannel, botMember } = ctx;
  const { messagePayload, newBotMessage, applyBody } = m;
  const { onCallback, onWebhookEdit, onFollowUp, interactionFor, webhookMessage } = i;

  const onChannelPost = (call: RestCall, channelId: string): RestResponse => {
    const found = findChannel(channelId);
    if (!found?.guild.botPresent) return apiError(404, 10003, 'Unknown Channel');
    const perms = channelPermissions(found.guild, botMember(found.guild), found.channel);
    const needed = PermissionFlagsBits.ViewChannel | PermissionFlagsBits.SendMessages;
    if ((perms & needed) !== needed) return apiError(403, 50013, 'Missing Permissions');
    const refused = uploadRefusal((call.body ?? {}) as Record<string, unknown>, perms);
    if (refused) return refused;
    const message = newBotMessage(
      found.guild,
      channelId,
      (call.body ?? {}) as Record<string, unknown>,
      undefined,
    );
    const list = posted.get(channelId) ?? [];
    list.push(message.id);
    posted.set(channelId, list);
    notify();
    return { status: 200, body: messagePayload(message) };
  };

  const storeCommands = (list: Json[], body: unknown, guildId: string | undefined): RestResponse => {
    const incoming = Array.isArray(body) ? (body as Record<string, unknown>[]) : [];
    const stored = incoming.map((command) => ({
      id: snowflake(),
      application_id: applicationId,
      version: snowflake(),
      type: 1,
      default_member_permissions: null,
      dm_permission: true,
      nsfw: false,
      contexts: null,
      integration_types: [0],
      ...(guildId ? { guild_id: guildId } : {}),
      ...command,
    }));
    list.splice(0, list.length, ...stored);
    notify();
    return { status: 200, body: stored };
  };

  const guildCommands = (guildId: string): Json[] => {
    let list = commands.guild.get(guildId);
    if (!list) {
      list = [];
      commands.guild.set(guildId, list);
    }
    return list;
  };

  const routes: Route[] = [
    {
      method: 'GET',
      pattern: /^\/gateway\/bot$/,
      bot: true,
      handle: () => ({
        status: 200,
        body: {
          url: urls.gateway(),
          shards: urls.shards(),
          session_start_limit: {
            total: SESSION_STARTS_PER_DAY,
            remaining: Math.max(0, SESSION_STARTS_PER_DAY - urls.identifies()),
            reset_after: 14_400_000,
            max_concurrency: urls.maxConcurrency,
          },
        },
      }),
    },
    { method: 'GET', pattern: /^\/gateway$/, handle: () => ({ status: 200, body: { url: urls.gateway() } }) },
    {
      method: 'GET',
      pattern: /^\/users\/@me$/,
      bot: true,
      handle: () => ({ status: 200, body: { ...userPayload(botUser), verified: true, flags: 0 } }),
    },
    {
      method: 'GET',
      pattern: /^\/applications\/@me$/,
      bot: true,
      handle: () => ({
        status: 200,
        body: {
          id: applicationId,
          name: botUser.name,
          flags: ctx.applicationFlags,
          bot_public: true,
          bot: userPayload(botUser),
          ...(ctx.applicationOwnerId === undefined
            ? {}
            : {
                owner: {
                  id: ctx.applicationOwnerId,
                  username: 'owner',
                  discriminator: '0',
                  global_name: null,
                  avatar: null,
                },
              }),
        },
      }),
    },
    {
      method: 'PUT',
      pattern: /^\/applications\/(\d+)\/commands$/,
      bot: true,
      handle: (call) => storeCommands(commands.global, call.body, undefined),
    },
    {
      method: 'GET',
      pattern: /^\/applications\/(\d+)\/commands$/,
      bot: true,
      handle: () => ({ status: 200, body: commands.global }),
    },
    {
      method: 'PUT',
      pattern: /^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/,
      bot: true,
      handle: (call, [, guildId = '']) =>
        guilds.has(guildId)
          ? storeCommands(guildCommands(guildId), call.body, guildId)
          : apiError(404, 10004, 'Unknown Guild'),
    },
    {
      method: 'GET',
      pattern: /^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/,
      bot: true,
      handle: (_call, [, guildId = '']) => ({ status: 200, body: commands.guild.get(guildId) ?? [] }),
    },
    {
      method: 'POST',
      pattern: /^\/interactions\/(\d+)\/([^/]+)\/callback$/,
      handle: (call, [id = '', token_ = '']) => onCallback(call, id, token_),
    },
    {
      method: 'PATCH',
      pattern: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      handle: (call, [, token_ = '', messageId = '']) => onWebhookEdit(call, token_, messageId),
    },
    {
      method: 'GET',
      pattern: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      handle: (_call, [, token_ = '', messageId = '']) => {
        const record = interactionFor(token_);
        if ('status' in record) return record;
        const message = webhookMessage(record, messageId);
        return message
          ? { status: 200, body: messagePayload(message) }
          : apiError(404, 10008, 'Unknown Message');
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      handle: (_call, [, token_ = '', messageId = '']) => {
        const record = interactionFor(token_);
        if ('status' in record) return record;
        const message = webhookMessage(record, messageId);
        if (!message) return apiError(404, 10008, 'Unknown Message');
        message.deleted = true;
        notify();
        return { status: 204 };
      },
    },
    {
      method: 'POST',
      pattern: /^\/webhooks\/(\d+)\/([^/]+)$/,
      handle: (call, [, token_ = '']) => onFollowUp(call, token_),
    },
    {
      method: 'POST',
      pattern: /^\/channels\/(\d+)\/messages$/,
      bot: true,
      handle: (call, [channelId = '']) => onChannelPost(call, channelId),
    },
    {
      method: 'PATCH',
      pattern: /^\/channels\/(\d+)\/messages\/(\d+)$/,
      bot: true,
      handle: (call, [channelId = '', messageId = '']) => {
        const message = messages.get(messageId);
        if (!message || message.channelId !== channelId || message.deleted || message.author) {
          return apiError(404, 10008, 'Unknown Message');
        }
        const body = (call.body ?? {}) as Record<string, unknown>;
        const overLimit = messageLimitRefusal(body);
        if (overLimit) return overLimit;
        applyBody(message, body);
        message.editedTimestamp = new Date().toISOString();
        notify();
        return { status: 200, body: messagePayload(message) };
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/channels\/(\d+)\/messages\/(\d+)$/,
      bot: true,
      handle: (_call, [channelId = '', messageId = '']) => {
        const message = messages.get(messageId);
        if (!message || message.channelId !== channelId || message.deleted) {
          return apiError(404, 10008, 'Unknown Message');
        }
        message.deleted = true;
        notify();
        return { status: 204 };
      },
    },
    {
      method: 'GET',
      pattern: /^\/channels\/(\d+)$/,
      bot: true,
      handle: (_call, [channelId = '']) => {
        const found = findChannel(channelId);
        return found
          ? { status: 200, body: channelPayload(found.channel) }
          : apiError(404, 10003, 'Unknown Channel');
      },
    },
    {
      method: 'GET',
      pattern: /^\/guilds\/(\d+)\/members\/(\d+)$/,
      bot: true,
      handle: (_call, [guildId = '', userId = '']) => {
        const member = guilds.get(guildId)?.members.get(userId);
        return member ? { status: 200, body: memberPayload(member) } : apiError(404, 10007, 'Unknown Member');
      },
    },
  ];

  return { routes };
}

/** What {@link createRoutes} returns. */
export type Routes = ReturnType<typeof createRoutes>;
