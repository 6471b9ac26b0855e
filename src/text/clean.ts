import { type EmojiMode, speakEmoji } from './emoji.ts';
import { describeLink } from './links.ts';

/** Options of {@link cleanPlain}. */
export interface CleanOptions {
  /** Unicode emoji spoken by name or dropped. */
  readonly emoji: EmojiMode;
  /** Longest run kept of one character, short unit or phrase; Infinity keeps every run. */
  readonly repeatCap: number;
  /** Links found here are spoken with their domain. */
  readonly linkDomains: boolean;
}

// Line breaks of every kind become "\n" and other spacing a plain space, so later steps see two kinds only.
const LINE_BREAKS = /\r\n?|[\v\f\u0085\u2028\u2029]/gu;
const SPACES = /[\t\p{Zs}]/gu;
// Controls, invisible formatting (bidi overrides, zero-width spaces), lone surrogates, private use (the
// markdown step's own markers) and unassigned code points; ZWJ and tag characters wait for the emoji step.
const INVISIBLE = /[\p{Cc}\p{Cs}\p{Co}\p{Cn}]|(?![\u200D\u{E0020}-\u{E007F}])\p{Cf}/gu;
const NOT_NEWLINE_CONTROL = /[^\S\n]/gu;

// Discord parses the raw text, before any normalisation. A character NFC maps onto markup (U+1FEF GREEK VARIA
// becomes "`") would open code or a spoiler that Discord never showed, and could read a spoiler aloud: such
// characters are dropped first. Found by character rather than listed, so a later Unicode version is covered.
const NON_ASCII = /[^\0-\x7F]/gu;
const MARKUP = /[`|\\*_~<>#[\]()@:-]/;

function dropMarkupLookalikes(text: string): string {
  return text.replace(NON_ASCII, (char) => (MARKUP.test(char.normalize('NFC')) ? '' : char));
}

/**
 * First pass over any user-supplied text: NFC, one kind of line break, no controls or invisible characters.
 * Private-use characters are removed here, which is what lets the markdown step use them as markers.
 */
export function sanitise(text: string): string {
  return dropMarkupLookalikes(text)
    .normalize('NFC')
    .replace(LINE_BREAKS, '\n')
    .replace(SPACES, ' ')
    .replace(INVISIBLE, (char) => (char === '\n' ? '\n' : ''))
    .replace(NOT_NEWLINE_CONTROL, ' ');
}

// Joiners, tag characters and variation selectors left over once emoji have been named.
const EMOJI_LEFTOVERS = /\u200D|[\u{E0000}-\u{E007F}]|[\uFE00-\uFE0F]|[\u{E0100}-\u{E01EF}]/gu;
// More than two stacked marks on one letter is "Zalgo" text; real scripts need at most two after NFC.
const MARK_FLOOD = /(\p{M}{2})\p{M}+/gu;
const LEADING_MARKS = /(^|\s)\p{M}+/gu;

// Above this the regular expressions would need absurd quantifiers; such a cap means "no cap".
const LARGEST_CAP = 1000;

/** Caps runs of one character or a unit of two or three ("nooooo", "hahahaha", "!!!!!") at `cap` repeats; digits are never capped, since "1000000" must keep its zeros. */
export function capRepeats(text: string, cap: number): string {
  if (!(cap <= LARGEST_CAP)) return text;
  const runs = new RegExp(`([^\\p{Nd}\\s]{1,3}?)\\1{${cap},}`, 'gu');
  return text.replace(runs, (_, unit: string) => unit.repeat(cap));
}

// The longest CLDR emoji name has eight words, so a repeated emoji is caught as a repeated phrase.
const LONGEST_PHRASE_WORDS = 8;

/** Caps a word or phrase repeated back to back, case-insensitively ("lol lol lol lol" → "lol lol lol" at 3). */
export function capPhrases(text: string, cap: number): string {
  if (!(cap <= LARGEST_CAP)) return text;
  const phrases = new RegExp(`(?<!\\S)((?:\\S+\\s+){1,${LONGEST_PHRASE_WORDS}}?)\\1{${cap},}`, 'giu');
  return `${text} `.replace(phrases, (_, unit: string) => unit.repeat(cap)).trimEnd();
}

/** Joins lines into one: a comma where a line ended without punctuation, so the voice still pauses. */
function joinLines(text: string): string {
  const lines = text
    .split('\n')
    .map((line) => line.replace(/\s+/gu, ' ').trim())
    .filter((line) => line !== '');
  return lines.reduce((joined, line) => {
    if (joined === '') return line;
    return /\p{P}$/u.test(joined) ? `${joined} ${line}` : `${joined}, ${line}`;
  }, '');
}

function tidyPunctuation(text: string): string {
  return text
    .replace(/\s+([,.!?;:])/gu, '$1')
    .replace(/\(\s+/gu, '(')
    .replace(/\s+\)/gu, ')')
    .replace(/,(?:\s*,)+/gu, ',')
    .replace(/,([.!?;:])/gu, '$1')
    .replace(/^[\s,.;:]+/u, '')
    .replace(/[\s,;:]+$/u, '');
}

// "<" that would start mention syntax ("<@", "<#", "<:", "<a:", "<t:"); the whole run goes, so removing one
// "<" can never bring another next to the "@".
const MENTION_OPENER = /<+(?=[@#:]|[at]:)/giu;
const SCHEME_URL = /[a-z][a-z0-9+.-]*:\/\/[^\s<>]*/giu;
// A scheme and nothing after it ("http:// is a scheme") is read as the scheme's name; anything longer is a link.
const BARE_SCHEME = /^[a-z][a-z0-9+.-]*:\/\/$/iu;
const WWW_URL = /(?<![\p{L}\p{N}])www\.[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+[^\s<>]*/giu;
const WWW_DOT = /www\.+/giu;

/**
 * The last safety net: whatever survived or was assembled from names (a nickname "www.x.com", an escaped
 * "\<@1>"), no mention opener and no URL leaves here. Later steps only cut or collapse spaces, which cannot
 * rebuild either.
 */
export function scrub(text: string, linkDomains: boolean): string {
  return text
    .replace(MENTION_OPENER, '')
    .replace(SCHEME_URL, (url) =>
      BARE_SCHEME.test(url) ? url.replace(/:\/\/$/, '') : ` ${describeLink(url, linkDomains)} `,
    )
    .replace(WWW_URL, (url) => ` ${describeLink(url, linkDomains)} `)
    .replace(WWW_DOT, 'www ');
}

/** Plain text (sanitised, markdown already resolved) → speakable text on one line, emoji named, floods capped, no mention syntax or URL. */
export function cleanPlain(text: string, options: CleanOptions): string {
  const named = speakEmoji(text, options.emoji)
    .replace(EMOJI_LEFTOVERS, '')
    .replace(MARK_FLOOD, '$1')
    .replace(LEADING_MARKS, '$1');
  const oneLine = joinLines(capRepeats(named, options.repeatCap));
  const tidy = tidyPunctuation(capPhrases(oneLine, options.repeatCap));
  return scrub(tidy, options.linkDomains).replace(/\s+/gu, ' ').trim();
}
