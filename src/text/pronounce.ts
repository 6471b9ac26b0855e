/**
 * A server's pronunciation dictionary, applied by the normaliser: whole words (or phrases), case-insensitive,
 * the longest match first, so "New York" wins over "New".
 */

/** One entry: what members write, and what Herald should say instead. */
export interface Pronunciation {
  readonly word: string;
  readonly spoken: string;
}

/** A dictionary compiled for repeated use; build it with {@link compilePronunciations}. */
export interface Pronunciations {
  readonly pattern: RegExp | undefined;
  readonly spokenOf: ReadonlyMap<string, string>;
}

/** No entries: text passes unchanged. */
export const NO_PRONUNCIATIONS: Pronunciations = { pattern: undefined, spokenOf: new Map() };

// A word character on either side means the match is inside a longer word, which is not a whole-word match.
const WORD_CHAR = '[\\p{L}\\p{N}\\p{M}_]';

/** The key entries are matched by: lower case, inner whitespace collapsed. */
export function wordKey(word: string): string {
  return word.trim().replace(/\s+/g, ' ').toLowerCase();
}

/** Compiles entries into one pattern; longer words are tried first at every position. */
export function compilePronunciations(entries: readonly Pronunciation[]): Pronunciations {
  const spokenOf = new Map<string, string>();
  for (const entry of entries) {
    const key = wordKey(entry.word);
    if (key !== '') spokenOf.set(key, entry.spoken);
  }
  if (spokenOf.size === 0) return NO_PRONUNCIATIONS;
  const alternatives = [...spokenOf.keys()]
    .sort((a, b) => [...b].length - [...a].length || (a < b ? -1 : 1))
    .map((key) => key.split(' ').map(escapeRegExp).join('\\s+'));
  const pattern = new RegExp(`(?<!${WORD_CHAR})(?:${alternatives.join('|')})(?!${WORD_CHAR})`, 'giu');
  return { pattern, spokenOf };
}

/** Replaces every whole-word occurrence of a dictionary word by its spoken form. Pure; replacements are not re-scanned. */
export function applyPronunciations(text: string, dictionary: Pronunciations): string {
  if (!dictionary.pattern) return text;
  return text.replace(dictionary.pattern, (match) => dictionary.spokenOf.get(wordKey(match)) ?? match);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
