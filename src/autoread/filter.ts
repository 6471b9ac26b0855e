import type { AutoReadSettings } from './settings.ts';

/** What the decision needs to know about one new message, already read off the discord.js object. */
export interface MessageFacts {
  readonly channelId: string;
  readonly authorId: string;
  /** The author is a bot account (webhook authors count as bots too; see `webhook`). */
  readonly bot: boolean;
  /** Sent through a webhook (includes most bridges and interaction follow-ups by other apps). */
  readonly webhook: boolean;
  /** Written by Herald itself (its own notices), never read even when bots are. */
  readonly self: boolean;
  /** A system message: joins, pins, boosts, thread creations. */
  readonly system: boolean;
  /** Sent with @silent (message flag 4096, SUPPRESS_NOTIFICATIONS). */
  readonly silent: boolean;
  readonly content: string;
  /** Attachments plus stickers: a message of only an image is still "an image". */
  readonly extras: number;
  /** The voice channel the author is in, or null. */
  readonly authorVoiceChannelId: string | null;
}

/** The state around the message: where Herald is, and what the author asked for. */
export interface DecideContext {
  /** The voice channel Herald is in (or joining) in the message's server; null when not in voice there. */
  readonly heraldVoiceChannelId: string | null;
  /** The author opted out of being read in this server. */
  readonly optedOut: boolean;
  /** An admin blocked the author (`/block`). */
  readonly blocked?: boolean;
}

/** Why a message is not read; a value, logged at debug level, never an error. */
export type IgnoreReason =
  | 'herald-not-in-voice'
  | 'not-bound'
  | 'self'
  | 'system'
  | 'webhook'
  | 'bot'
  | 'opted-out'
  | 'blocked'
  | 'silent'
  | 'prefix'
  | 'not-in-voice'
  | 'not-with-herald'
  | 'empty';

/** Outcome of {@link decide}; `via` says whether the channel is bound or is Herald's voice channel's chat. */
export type Decision =
  | { readonly kind: 'read'; readonly via: 'bound-channel' | 'voice-chat' }
  | { readonly kind: 'ignore'; readonly reason: IgnoreReason };

/**
 * Decides whether a new message is read aloud. Pure. The checks run cheapest and most common first, so the
 * reason given is the first that applies.
 */
export function decide(message: MessageFacts, settings: AutoReadSettings, context: DecideContext): Decision {
  const herald = context.heraldVoiceChannelId;
  // Not in voice (and not about to auto-join the author's channel): nothing can be read.
  if (herald === null) return ignore('herald-not-in-voice');
  const via = settings.channelIds.includes(message.channelId)
    ? 'bound-channel'
    : settings.readVoiceChat && message.channelId === herald
      ? 'voice-chat'
      : undefined;
  if (via === undefined) return ignore('not-bound');
  if (message.self) return ignore('self');
  if (message.system) return ignore('system');
  if (settings.ignoreBots && message.webhook) return ignore('webhook');
  if (settings.ignoreBots && message.bot) return ignore('bot');
  if (context.optedOut) return ignore('opted-out');
  if (context.blocked) return ignore('blocked');
  if (settings.skipSilent && message.silent) return ignore('silent');
  if (settings.prefix !== '' && message.content.trimStart().startsWith(settings.prefix))
    return ignore('prefix');
  // A webhook has no voice state, so with ignoreBots off it is read whatever onlySameVoice says.
  if (settings.onlySameVoice && !message.webhook) {
    if (message.authorVoiceChannelId === null) return ignore('not-in-voice');
    if (message.authorVoiceChannelId !== herald) return ignore('not-with-herald');
  }
  if (message.content.trim() === '' && message.extras === 0) return ignore('empty');
  return { kind: 'read', via };
}

function ignore(reason: IgnoreReason): Decision {
  return { kind: 'ignore', reason };
}
