import { uploadRefusal } from './attachments.ts';
import { choicesRefusal } from './limits.ts';
import type { Messages } from './messages.ts';
import {
  type ChannelState,
  channelPayload,
  channelPermissions,
  type GuildState,
  memberPayload,
  randomToken,
  snowflake,
  userPayload,
} from './model.ts';
import { apiError, type RestCall, type RestResponse } from './rest.ts';
import {
  CALLBACK,
  type Context,
  EPHEMERAL,
  INTERACTION_TOKEN_LIFETIME_MS,
  type InteractionRecord,
  type MessageRecord,
} from './state.ts';
import type { Channel, Json, Member, Reply } from './types.ts';

/** A fresh interaction, not answered yet, with a token that works for 15 minutes from now. */
export function newInteractionRecord(
  fields: Pick<InteractionRecord, 'type' | 'guild' | 'channel' | 'name' | 'appPermissions'>,
): InteractionRecord {
  return {
    id: snowflake(),
    token: `aW50ZXJhY3Rpb24${randomToken(48)}`,
    ...fields,
    createdAt: Date.now(),
    source: undefined,
    acknowledged: false,
    deferred: false,
    original: undefined,
    final: undefined,
    edits: [],
    followUps: [],
    choices: undefined,
    expired: false,
  };
}

/** Interactions: building them for the bot, and the callback and webhook routes that answer them. */
export function createInteractions(ctx: Context, m: Messages) {
  const {
    interactions,
    messages,
    commands,
    applicationId,
    interactionResponseMs,
    timers,
    gateway,
    notify,
    waitFor,
    guildOf,
    memberOf,
    channelOf,
    botMember,
  } = ctx;
  const { messagePayload, snapshot, newBotMessage, applyBody } = m;

  const makeReply = (record: InteractionRecord, message: MessageRecord, deferred: boolean): Reply => ({
    content: message.content,
    embeds: message.embeds,
    components: message.components,
    ephemeral: (message.flags & EPHEMERAL) !== 0,
    deferred,
    allowedMentions: message.allowedMentions,
    message: snapshot(message),
    edits: record.edits,
    followUps: () => [...record.followUps],
    untilEdited: (w) => {
      const seen = record.edits.length;
      return waitFor('an edit of the reply', w?.timeoutMs ?? 10_000, () => record.edits[seen]);
    },
    untilFollowUp: (w) => {
      const seen = record.followUps.length;
      return waitFor('a follow-up', w?.timeoutMs ?? 10_000, () => record.followUps[seen]);
    },
    deleted: () => record.original?.deleted === true,
  });

  const finalise = (record: InteractionRecord, message: MessageRecord): void => {
    const reply = makeReply(record, message, record.deferred);
    if (record.final) record.edits.push(reply);
    else record.final = reply;
    notify();
  };

  const interactionFor = (token_: string): InteractionRecord | RestResponse => {
    const record = interactions.get(token_);
    if (!record) return apiError(404, 10015, 'Unknown Webhook');
    if (Date.now() - record.createdAt > INTERACTION_TOKEN_LIFETIME_MS) {
      return apiError(401, 50027, 'Invalid Webhook Token');
    }
    return record;
  };

  const onCallback = (call: RestCall, id: string, token_: string): RestResponse => {
    const record = interactions.get(token_);
    if (!record || record.id !== id || record.expired) return apiError(404, 10062, 'Unknown interaction');
    if (record.acknowledged) return apiError(400, 40060, 'Interaction has already been acknowledged.');
    const body = (call.body ?? {}) as { type?: number; data?: Record<string, unknown> };
    const data = body.data ?? {};
    // A multipart callback carries its files beside payload_json's `data`.
    if (Array.isArray((call.body as { files?: unknown })?.files)) {
      data.files = (call.body as { files: unknown[] }).files;
    }
    const refused = uploadRefusal(data, record.appPermissions);
    if (refused) return refused;
    record.acknowledged = true;
    let resource: MessageRecord | undefined;
    switch (body.type) {
      case CALLBACK.reply:
        record.original = newBotMessage(record.guild, record.channel.id, data, record.id);
        resource = record.original;
        finalise(record, record.original);
        break;
      case CALLBACK.defer:
        record.deferred = true;
        // The "thinking…" message exists from now on; the edit fills it in.
        record.original = newBotMessage(
          record.guild,
          record.channel.id,
          { flags: (Number(data.flags) || 0) | 128 },
          record.id,
        );
        resource = record.original;
        notify();
        break;
      case CALLBACK.update:
      case CALLBACK.deferUpdate: {
        if (!record.source) return apiError(400, 50035, 'Invalid Form Body');
        record.original = record.source;
        resource = record.source;
        if (body.type === CALLBACK.update) {
          applyBody(record.source, data);
          record.source.editedTimestamp = new Date().toISOString();
          finalise(record, record.source);
        } else {
          record.deferred = true;
          notify();
        }
        break;
      }
      case CALLBACK.autocomplete: {
        const overLimit = choicesRefusal(data);
        if (overLimit) {
          record.acknowledged = false;
          return overLimit;
        }
        record.choices = (Array.isArray(data.choices) ? data.choices : []) as InteractionRecord['choices'];
        notify();
        break;
      }
      case CALLBACK.modal:
        notify();
        break;
      default:
        record.acknowledged = false;
        return apiError(400, 50035, 'Invalid Form Body');
    }
    if (call.query.with_response !== 'true') return { status: 204 };
    return {
      status: 200,
      body: {
        interaction: {
          id: record.id,
          type: record.type,
          response_message_id: resource?.id,
          response_message_loading: body.type === CALLBACK.defer,
          response_message_ephemeral: resource ? (resource.flags & EPHEMERAL) !== 0 : false,
        },
        resource: { type: body.type, ...(resource ? { message: messagePayload(resource) } : {}) },
      },
    };
  };

  const webhookMessage = (record: InteractionRecord, messageId: string): MessageRecord | undefined => {
    if (messageId === '@original') return record.original?.deleted ? undefined : record.original;
    const message = messages.get(messageId);
    return message && message.interactionId === record.id && !message.deleted ? message : undefined;
  };

  const onWebhookEdit = (call: RestCall, token_: string, messageId: string): RestResponse => {
    const record = interactionFor(token_);
    if ('status' in record) return record;
    const message = webhookMessage(record, messageId);
    if (!message) return apiError(404, 10008, 'Unknown Message');
    const body = (call.body ?? {}) as Record<string, unknown>;
    const refused = uploadRefusal(body, record.appPermissions);
    if (refused) return refused;
    applyBody(message, body);
    // The loading flag goes once the deferred response is filled in.
    message.flags &= ~128;
    message.editedTimestamp = new Date().toISOString();
    if (message === record.original) finalise(record, message);
    else notify();
    return { status: 200, body: messagePayload(message) };
  };

  const onFollowUp = (call: RestCall, token_: string): RestResponse => {
    const record = interactionFor(token_);
    if ('status' in record) return record;
    if (!record.acknowledged) return apiError(404, 10015, 'Unknown Webhook');
    const refused = uploadRefusal((call.body ?? {}) as Record<string, unknown>, record.appPermissions);
    if (refused) return refused;
    const message = newBotMessage(
      record.guild,
      record.channel.id,
      (call.body ?? {}) as Record<string, unknown>,
      record.id,
    );
    record.followUps.push(makeReply(record, message, false));
    notify();
    return { status: 200, body: messagePayload(message) };
  };

  const findCommand = (guildId: string, name: string): Json | undefined =>
    commands.guild.get(guildId)?.find((c) => c.name === name) ?? commands.global.find((c) => c.name === name);

  /** Builds `data.options` and `data.resolved` from test values, typed by the registered command if any. */
  const buildOptions = (
    guild: GuildState,
    channel: ChannelState,
    definition: Json,
    values: Record<string, string | number | boolean | Channel | Member>,
    subcommand: string | undefined,
    focused: string | undefined,
  ): { options: Json[]; resolved: Record<string, Record<string, unknown>> } => {
    const resolved: Record<string, Record<string, unknown>> = {};
    const put = (kind: string, id: string, value: unknown): void => {
      resolved[kind] ??= {};
      (resolved[kind] as Record<string, unknown>)[id] = value;
    };
    const subDefinition = subcommand
      ? (definition?.options ?? []).find((o: Json) => o.name === subcommand && o.type === 1)
      : definition;
    const defined: Json[] = subDefinition?.options ?? [];
    const options = Object.entries(values).map(([name, value]) => {
      const declared = defined.find((o) => o.name === name)?.type as number | undefined;
      const base = { name, ...(name === focused ? { focused: true } : {}) };
      if (typeof value === 'object' && 'type' in value) {
        const target = channelOf(value);
        const perms = channelPermissions(guild, botMember(guild), target);
        put('channels', target.id, { ...channelPayload(target), permissions: perms.toString() });
        return { ...base, type: 7, value: target.id };
      }
      if (typeof value === 'object') {
        const target = memberOf(value);
        put('users', target.id, userPayload(target));
        put('members', target.id, {
          ...memberPayload(target, false),
          permissions: channelPermissions(guild, target, channel).toString(),
        });
        return { ...base, type: 6, value: target.id };
      }
      if (typeof value === 'boolean') return { ...base, type: 5, value };
      if (typeof value === 'number') {
        return { ...base, type: declared ?? (Number.isInteger(value) ? 4 : 10), value };
      }
      return { ...base, type: declared === 4 || declared === 10 ? declared : 3, value };
    });
    return { options: subcommand ? [{ type: 1, name: subcommand, options }] : options, resolved };
  };

  const interactionBase = (
    member: Member,
    channel: ChannelState,
    type: 2 | 3 | 4,
    locale: string | undefined,
  ): { record: InteractionRecord; payload: Record<string, unknown> } => {
    const guild = guildOf(member.guildId);
    if (!guild.botPresent) throw new Error('discord emulator: the bot is not in this guild');
    const who = memberOf(member);
    const record = newInteractionRecord({
      type,
      guild,
      channel,
      name: '',
      appPermissions: channelPermissions(guild, botMember(guild), channel),
    });
    const appPermissions = channelPermissions(guild, botMember(guild), channel);
    const payload = {
      id: record.id,
      application_id: applicationId,
      type,
      token: record.token,
      version: 1,
      guild_id: guild.id,
      guild: { id: guild.id, locale: 'en-US', features: [] },
      channel_id: channel.id,
      channel: { ...channelPayload(channel), permissions: appPermissions.toString() },
      member: { ...memberPayload(who), permissions: channelPermissions(guild, who, channel).toString() },
      app_permissions: appPermissions.toString(),
      locale: locale ?? 'en-US',
      guild_locale: 'en-US',
      entitlements: [],
      authorizing_integration_owners: { '0': guild.id },
      context: 0,
      attachment_size_limit: 10_485_760,
    };
    return { record, payload };
  };

  /** Dispatches an interaction and waits for its final answer; Discord forgets it after the response window. */
  const run = (
    record: InteractionRecord,
    payload: Record<string, unknown>,
    timeoutMs: number,
  ): Promise<Reply> => {
    interactions.set(record.token, record);
    gateway.dispatch('INTERACTION_CREATE', payload);
    const expiry = setTimeout(() => {
      timers.delete(expiry);
      if (!record.acknowledged) {
        record.expired = true;
        notify();
      }
    }, interactionResponseMs);
    timers.add(expiry);
    return waitFor(`an answer to ${record.name}`, timeoutMs, () => {
      if (record.expired) {
        throw new Error(
          `discord emulator: the bot did not respond to ${record.name} within ${interactionResponseMs} ms`,
        );
      }
      return record.final;
    });
  };

  const defaultTextChannel = (guild: GuildState): ChannelState => {
    const channel = [...guild.channels.values()].find((c) => c.type === 'text');
    if (!channel)
      throw new Error(`discord emulator: guild ${guild.name} has no text channel; pass o.channel`);
    return channel;
  };

  const findButton = (components: Json[], customId: string): Json | undefined => {
    for (const component of components) {
      if (component?.custom_id === customId) return component;
      const inner = findButton(component?.components ?? [], customId);
      if (inner) return inner;
    }
    return undefined;
  };

  return {
    makeReply,
    finalise,
    interactionFor,
    onCallback,
    webhookMessage,
    onWebhookEdit,
    onFollowUp,
    findCommand,
    buildOptions,
    interactionBase,
    run,
    defaultTextChannel,
    findButton,
  };
}

/** What {@link createInteractions} returns. */
export type Interactions = ReturnType<typeof createInteractions>;
