import { countCharacters } from '../tts/index.ts';

/** Said after a message cut to fit the character limit. */
export const TRUNCATION_SUFFIX = ' and more';

/**
 * Fits `text` into `maxChars` code points: unchanged when it fits, else cut at the last word boundary and
 * ended with " and more"; a first word too long for that is cut mid-word; a limit too small for the suffix
 * gets a bare cut.
 */
export function truncate(text: string, maxChars: number): string {
  const codePoints = Array.from(text);
  if (codePoints.length <= maxChars) return text;
  const budget = maxChars - countCharacters(TRUNCATION_SUFFIX);
  if (budget < 1) return codePoints.slice(0, Math.max(0, maxChars)).join('').trimEnd();
  let cut = budget;
  while (cut > 0 && !/\s/u.test(codePoints[cut] ?? ' ')) cut -= 1;
  // Trailing punctuation before the suffix would be read as a pause in the middle of "… and more".
  const kept = codePoints
    .slice(0, cut)
    .join('')
    .replace(/[\s\p{P}]+$/u, '');
  const head = kept === '' ? codePoints.slice(0, budget).join('').trimEnd() : kept;
  return `${head}${TRUNCATION_SUFFIX}`;
}
