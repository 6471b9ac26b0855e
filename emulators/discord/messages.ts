import { attachmentPayloads, uploadedFiles } from './attachments.ts';
import { type GuildState, memberPayload, snowflake, userPayload } from './model.ts';
import type { Context, MessageRecord } from './state.ts';
import type { SentMessage } from './types.ts';

/** Messages as the emulator stores them and as it sends them to the bot. */
export function createMessages(ctx: Context) {
  const { guilds, messages, botUser, applicationId } = ctx;
  const messagePayload = (message: MessageRecord): Record<string, unknown> => {
    const guild = guilds.get(message.guildId);
    const author = message.author;
    return {
      id: message.id,
      channel_id: message.channelId,
      // A DM's messages belong to no guild.
      ...(guild ? { guild_id: message.guildId } : {}),
      author: userPayload(author ?? botUser),
      ...(author && guild ? { member: memberPayload(author, false) } : {}),
      content: message.content,
      timestamp: message.timestamp,
      edited_timestamp: message.editedTimestamp,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: attachmentPayloads(message.id, message.files),
      embeds: message.embeds,
      components: message.components,
      pinned: false,
      type: message.replyTo ? 19 : 0,
      flags: message.flags,
      ...(message.interactionId ? { webhook_id: applicationId, application_id: applicationId } : {}),
      ...(message.replyTo
        ? {
            message_reference: {
              message_id: message.replyTo,
              channel_id: message.channelId,
              guild_id: message.guildId,
            },
          }
        : {}),
    };
  };

  const snapshot = (message: MessageRecord): SentMessage => ({
    id: message.id,
    channelId: message.channelId,
    content: message.content,
    embeds: message.embeds,
    components: message.components,
    allowedMentions: message.allowedMentions,
    flags: message.flags,
    replyTo: message.replyTo,
    files: [...message.files],
  });

  const newBotMessage = (
    guild: GuildState,
    channelId: string,
    body: Record<string, unknown>,
    interactionId: string | undefined,
  ): MessageRecord => {
    const message: MessageRecord = {
      id: snowflake(),
      channelId,
      guildId: guild.id,
      author: undefined,
      content: '',
      embeds: [],
      components: [],
      allowedMentions: undefined,
      flags: 0,
      replyTo: undefined,
      files: [],
      interactionId,
      timestamp: new Date().toISOString(),
      editedTimestamp: null,
      deleted: false,
    };
    applyBody(message, body);
    messages.set(message.id, message);
    return message;
  };

  const applyBody = (message: MessageRecord, body: Record<string, unknown>): void => {
    if ('content' in body) message.content = typeof body.content === 'string' ? body.content : '';
    if ('embeds' in body) message.embeds = Array.isArray(body.embeds) ? body.embeds : [];
    if ('components' in body) message.components = Array.isArray(body.components) ? body.components : [];
    if ('allowed_mentions' in body) message.allowedMentions = body.allowed_mentions;
    if (typeof body.flags === 'number') message.flags = body.flags;
    const reference = body.message_reference as { message_id?: string } | undefined;
    if (reference?.message_id) message.replyTo = reference.message_id;
    if (Array.isArray(body.files)) {
      const files = uploadedFiles(body);
      if (Array.isArray(files)) message.files = files;
    }
  };

  return { messagePayload, snapshot, newBotMessage, applyBody };
}

/** What {@link createMessages} returns. */
export type Messages = ReturnType<typeof createMessages>;
