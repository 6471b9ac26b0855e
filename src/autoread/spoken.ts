import {
  compilePronunciations,
  DEFAULT_REPEAT_CAP,
  type MessageToSpeak,
  normaliseMessage,
} from '../text/normalise.ts';
import type { Pronunciation } from '../text/pronounce.ts';
import { MAX_TEXT_CHARACTERS } from '../tts/index.ts';
import type { AutoReadSettings } from './settings.ts';

/** The parts of a message its spoken form reads (a discord.js `Message` and auto-read's `IncomingMessage` fit). */
export interface SpokenMessage {
  readonly content: string;
  readonly attachments: {
    values(): Iterable<{ readonly name: string; readonly contentType: string | null }>;
  };
  readonly stickers: { values(): Iterable<{ readonly name: string }> };
  /** Users the message mentions; their names are known even when they are not cached as members. */
  readonly mentions: { readonly users: { get(id: string): { readonly displayName: string } | undefined } };
  readonly guild: {
    readonly members: { readonly cache: { get(id: string): { readonly displayName: string } | undefined } };
    readonly roles: { readonly cache: { get(id: string): { readonly name: string } | undefined } };
    readonly channels: { readonly cache: { get(id: string): { readonly name: string } | undefined } };
  } | null;
}

/** What a message's spoken form depends on besides the message: the server's settings and dictionary. */
export interface SpokenOptions {
  readonly settings: Pick<AutoReadSettings, 'linkDomains' | 'emoji' | 'maxChars'>;
  readonly dictionary: readonly Pronunciation[];
  /** "<name> said" goes first when given (the caller decides: auto-read's window, or always). */
  readonly authorPrefix?: string | undefined;
}

/**
 * A message as auto-read says it: mentions, channels and roles by name (from the server's caches, the message's
 * mentions for users not cached), links and emoji as the server chose, its attachments and stickers, the
 * dictionary, the server's length limit. Pure over its inputs; empty when nothing is left to say.
 */
export function spokenTextOf(
  message: Pick<SpokenMessage, 'guild' | 'mentions'>,
  toSpeak: MessageToSpeak,
  options: SpokenOptions,
): string {
  const { settings } = options;
  return normaliseMessage(toSpeak, {
    // Names are looked up at the moment of speaking: the caches only ever get fresher.
    userName: (id) =>
      message.guild?.members.cache.get(id)?.displayName ?? message.mentions.users.get(id)?.displayName,
    roleName: (id) => message.guild?.roles.cache.get(id)?.name,
    channelName: (id) => message.guild?.channels.cache.get(id)?.name,
    linkDomains: settings.linkDomains,
    emoji: settings.emoji,
    maxChars: Math.min(settings.maxChars, MAX_TEXT_CHARACTERS),
    repeatCap: DEFAULT_REPEAT_CAP,
    pronunciations: compilePronunciations(options.dictionary),
    ...(options.authorPrefix === undefined ? {} : { authorPrefix: options.authorPrefix }),
  });
}

/** What of a message is spoken: its content, and its attachments and stickers described. */
export function toSpeakOf(
  message: Pick<SpokenMessage, 'content' | 'attachments' | 'stickers'>,
): MessageToSpeak {
  return {
    content: message.content,
    attachments: [...message.attachments.values()].map(({ name, contentType }) => ({ name, contentType })),
    stickers: [...message.stickers.values()].map(({ name }) => ({ name })),
  };
}
