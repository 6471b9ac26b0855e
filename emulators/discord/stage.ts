import { PermissionFlagsBits } from 'discord.js';
import { type ChannelState, channelPermissions, type GuildState, type MemberState } from './model.ts';
import { apiError, type RestCall, type RestResponse, type Route } from './rest.ts';
import type { Context } from './state.ts';

/** Sends a member's voice state again (VOICE_STATE_UPDATE) after a change on the stage. */
type Redispatch = (guild: GuildState, member: MemberState, channelId: string) => void;

/**
 * Seats a member who moves from `previous` to `channelId`: on a stage everyone sits in the audience
 * (`suppress: true`) until invited to speak; leaving a stage forgets the seat and any request to speak.
 */
export function seatOnStage(
  guild: GuildState,
  memberId: string,
  previous: string | undefined,
  channelId: string | null,
): void {
  if (previous === (channelId ?? undefined)) return;
  guild.suppressed ??= new Set();
  guild.requestToSpeak ??= new Map();
  guild.suppressed.delete(memberId);
  guild.requestToSpeak.delete(memberId);
  if (channelId && guild.channels.get(channelId)?.type === 'stage') guild.suppressed.add(memberId);
}

/** A moderator invites `member` to speak (or moves it back to the audience): `PATCH /voice-states/{user}`. */
export function setSuppressed(
  guild: GuildState,
  member: MemberState,
  suppressed: boolean,
  redispatch: Redispatch,
): void {
  const channelId = guild.voice.get(member.id);
  if (!channelId || guild.channels.get(channelId)?.type !== 'stage') {
    throw new Error(`discord emulator: ${member.name} is not on a stage`);
  }
  guild.suppressed ??= new Set();
  if (suppressed) guild.suppressed.add(member.id);
  else {
    guild.suppressed.delete(member.id);
    guild.requestToSpeak?.delete(member.id);
  }
  redispatch(guild, member, channelId);
}

/** `PATCH /guilds/{guild}/voice-states/@me`: the bot takes the stage or asks to, as Discord allows it. */
export function stageRoutes(ctx: Context, redispatch: Redispatch): Route[] {
  const onPatchOwn = (call: RestCall, guildId: string): RestResponse => {
    const guild = ctx.guilds.get(guildId);
    if (!guild?.botPresent) return apiError(404, 10004, 'Unknown Guild');
    const bot = ctx.botMember(guild);
    const body = (call.body ?? {}) as {
      channel_id?: unknown;
      suppress?: unknown;
      request_to_speak_timestamp?: unknown;
    };
    const channelId = guild.voice.get(bot.id);
    if (!channelId || body.channel_id !== channelId) return apiError(404, 10065, 'Unknown Voice State');
    const channel = guild.channels.get(channelId) as ChannelState;
    if (channel.type !== 'stage') return apiError(400, 50024, 'Cannot execute action on this channel type');
    const perms = channelPermissions(guild, bot, channel);
    if (body.suppress === false && (perms & PermissionFlagsBits.MuteMembers) === 0n) {
      return apiError(403, 50013, 'Missing Permissions');
    }
    const asks = typeof body.request_to_speak_timestamp === 'string';
    if (asks && (perms & PermissionFlagsBits.RequestToSpeak) === 0n) {
      return apiError(403, 50013, 'Missing Permissions');
    }
    guild.suppressed ??= new Set();
    guild.requestToSpeak ??= new Map();
    if (typeof body.suppress === 'boolean') {
      if (body.suppress) guild.suppressed.add(bot.id);
      else guild.suppressed.delete(bot.id);
    }
    if (asks) guild.requestToSpeak.set(bot.id, body.request_to_speak_timestamp as string);
    else if (body.request_to_speak_timestamp === null) guild.requestToSpeak.delete(bot.id);
    redispatch(guild, bot, channelId);
    ctx.notify();
    return { status: 204 };
  };
  return [
    {
      method: 'PATCH',
      pattern: /^\/guilds\/(\d+)\/voice-states\/@me$/,
      bot: true,
      handle: (call, [guildId = '']) => onPatchOwn(call, guildId),
    },
  ];
}
