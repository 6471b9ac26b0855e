import { countCharacters } from '../tts/index.ts';
import { describeExtras } from './attachments.ts';
import { cleanPlain, sanitise } from './clean.ts';
import type { EmojiMode } from './emoji.ts';
import { resolveMarkdown } from './markdown.ts';
import { applyPronunciations, NO_PRONUNCIATIONS, type Pronunciations } from './pronounce.ts';
import { truncate } from './truncate.ts';

// The limit is in the service's own unit, so the count comes from the TTS client, re-exported for callers here.
export { countCharacters } from '../tts/index.ts';
export type { EmojiMode } from './emoji.ts';
export {
  compilePronunciations,
  NO_PRONUNCIATIONS,
  type Pronunciation,
  type Pronunciations,
} from './pronounce.ts';
export { TRUNCATION_SUFFIX } from './truncate.ts';

/** The parts of a Discord message that can be spoken. */
export interface MessageToSpeak {
  /** Raw message content, with Discord's markdown and mention syntax. */
  readonly content: string;
  /** Attached files; described by kind ("an image"), never by name. */
  readonly attachments: readonly { readonly name: string; readonly contentType: string | null }[];
  /** Stickers; described as "a sticker: name". */
  readonly stickers: readonly { readonly name: string }[];
}

/** How a message is turned into speech; the stateful choices (say the author's name?) are made by the caller. */
export interface NormaliseOptions {
  /** Display name for a user id (server nickname, else display name); undefined when unknown → "someone". */
  readonly userName: (id: string) => string | undefined;
  /** Role name for a role id; undefined when unknown → "a role". */
  readonly roleName: (id: string) => string | undefined;
  /** Channel name for a channel id; undefined when unknown → "a channel". */
  readonly channelName: (id: string) => string | undefined;
  /** Say "a link to example.com" instead of "a link" (masked links add "(a link to example.com)"). */
  readonly linkDomains: boolean;
  /** Unicode emoji: their CLDR name, or dropped. Custom server emoji are always named. */
  readonly emoji: EmojiMode;
  /** Limit on the output in code points, including the "<name> said" prefix and "and more"; 0 or NaN gives ''. */
  readonly maxChars: number;
  /** Max run of one repeated character, short unit, word or phrase (3: "nooooo" → "nooo"); below 2 counts as 2, Infinity or NaN caps nothing. */
  readonly repeatCap: number;
  /** When set, the output starts with "<speakerName> said" (the caller decides whether the author spoke recently). */
  readonly authorPrefix?: string;
  /** IANA time zone in which Discord timestamps are spoken as dates; UTC by default. */
  readonly timeZone?: string;
  /** The server's pronunciation dictionary, applied before the length limit; none by default. */
  readonly pronunciations?: Pronunciations;
}

/**
 * The text of a `/speak`: typed by the member as they want it said, so only the server's pronunciation
 * dictionary applies. Run before the length limit and the cost estimate, like {@link normaliseMessage}.
 */
export function normaliseSpeech(text: string, options: { readonly pronunciations?: Pronunciations }): string {
  return applyPronunciations(text, options.pronunciations ?? NO_PRONUNCIATIONS);
}

/** The limit on spoken characters per message when a server has not chosen one. */
export const DEFAULT_MAX_CHARS = 300;
/** The repeat cap when a server has not chosen one. */
export const DEFAULT_REPEAT_CAP = 3;
/** "<name> said" is repeated only when the same author has not spoken for this long. */
export const AUTHOR_PREFIX_WINDOW_MS = 60_000;

/** True when a message by `authorId` at `at` (ms) should start with "<name> said", given the last message read in that channel. */
export function needsAuthorPrefix(
  previous: { readonly authorId: string; readonly at: number } | undefined,
  authorId: string,
  at: number,
  windowMs: number = AUTHOR_PREFIX_WINDOW_MS,
): boolean {
  return previous === undefined || previous.authorId !== authorId || !(at - previous.at < windowMs);
}

function hasWords(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}

/** Calls a caller-supplied lookup, treating a throw like an unknown id so normalisation stays total. */
function lookUp(lookup: (id: string) => string | undefined, id: string): string | undefined {
  try {
    return lookup(id);
  } catch {
    return undefined;
  }
}

/**
 * Turns a Discord message into the text to speak. Pure and total: never throws, output never exceeds maxChars
 * code points, contains no mention syntax (<@id>, <@!id>, <@&id>, <#id>, <:name:id>, <a:name:id>, <t:...>) and no
 * URL. Returns '' when nothing is left to say (the caller then skips the message, paying nothing).
 */
export function normaliseMessage(message: MessageToSpeak, options: NormaliseOptions): string {
  const maxChars = Number.isNaN(options.maxChars) ? 0 : Math.floor(options.maxChars);
  const repeatCap = Number.isFinite(options.repeatCap)
    ? Math.max(2, Math.floor(options.repeatCap))
    : Infinity;
  const clean = { emoji: options.emoji, repeatCap, linkDomains: options.linkDomains };
  // Names are the members' own choice of characters: cleaned like text, but their emoji are never read out, and
  // their angle brackets go (a name like "<t:" would otherwise start mention syntax next to the text after it).
  const speakName = (name: string | undefined, fallback: string) => {
    const spoken =
      name === undefined ? '' : cleanPlain(sanitise(name).replace(/[<>]/g, ' '), { ...clean, emoji: 'drop' });
    return hasWords(spoken) ? spoken : fallback;
  };
  const content = resolveMarkdown(sanitise(String(message.content ?? '')), {
    userName: (id) => speakName(lookUp(options.userName, id), 'someone'),
    roleName: (id) => speakName(lookUp(options.roleName, id), 'a role'),
    channelName: (id) => speakName(lookUp(options.channelName, id), 'a channel'),
    linkDomains: options.linkDomains,
    timeZone: options.timeZone ?? 'UTC',
  });
  const extras = describeExtras(
    message.attachments ?? [],
    (message.stickers ?? []).map((sticker) => speakName(sticker.name, '')),
  );
  const dictionary = options.pronunciations ?? NO_PRONUNCIATIONS;
  const body = applyPronunciations(cleanPlain(`${content}\n${extras}`, clean), dictionary);
  // Punctuation alone would buy seconds of silence.
  if (!hasWords(body) || maxChars <= 0) return '';
  const prefix =
    options.authorPrefix === undefined
      ? ''
      : `${applyPronunciations(speakName(options.authorPrefix, 'someone'), dictionary)} said, `;
  let result = truncate(`${prefix}${body}`, maxChars);
  // A name that leaves no room for any of the message is dropped rather than read on its own.
  if (
    prefix !== '' &&
    !(result.startsWith(prefix) && hasWords(result.slice(prefix.length).replace(/ and more$/, '')))
  ) {
    result = truncate(body, maxChars);
  }
  return countCharacters(result) <= maxChars ? result : '';
}
