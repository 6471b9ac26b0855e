import { describe, expect, it } from 'vitest';
import { truncate } from '../../src/text/truncate.ts';
import { countCharacters } from '../../src/tts/index.ts';

const CASES: readonly (readonly [name: string, text: string, max: number, expected: string])[] = [
  ['fits unchanged', 'one two', 7, 'one two'],
  ['cut at the last whole word', 'one two three four', 16, 'one two and more'],
  ['boundary just after the budget counts', 'one two three', 12, 'one and more'],
  ['trailing punctuation dropped', 'one, two three', 13, 'one and more'],
  ['first word too long is cut inside', 'abcdefghijklmnop', 12, 'abc and more'],
  ['limit below the suffix gets a bare cut', 'abcdef ghi', 4, 'abcd'],
  ['emoji count as one code point each', '😀😀😀 a b c d e f', 12, '😀😀😀 and more'],
  ['zero limit', 'abc', 0, ''],
];

describe('truncate', () => {
  for (const [name, text, max, expected] of CASES) {
    it(name, () => {
      const result = truncate(text, max);
      expect(result).toBe(expected);
      expect(countCharacters(result)).toBeLessThanOrEqual(max);
    });
  }
});
