import { describe, expect, it } from 'vitest';
import { nameEmoji, speakEmoji } from '../../src/text/emoji.ts';

describe('nameEmoji', () => {
  it.each([
    ['😀', 'grinning face'],
    ['👍🏿', 'thumbs up'],
    ['❤', 'red heart'],
    ['👩🏻‍❤️‍💋‍👨🏿', 'kiss woman, man'],
    ['🏳️‍🌈', 'rainbow flag'],
    ['🇯🇵', 'flag Japan'],
    ['🫠', 'melting face'],
    ['🇦', undefined],
    ['a', undefined],
  ] as const)('%s → %s', (emoji, expected) => {
    expect(nameEmoji(emoji)).toBe(expected);
  });
});

describe('speakEmoji', () => {
  it('names emoji between spaces and drops them on request', () => {
    expect(speakEmoji('a😀b', 'name')).toBe('a grinning face b');
    expect(speakEmoji('a😀b', 'drop')).toBe('a b');
  });

  it('leaves digits, "#" and "*" alone unless they are keycaps', () => {
    expect(speakEmoji('#1 * 2', 'name')).toBe('#1 * 2');
    expect(speakEmoji('1️⃣', 'name')).toBe(' keycap 1 ');
  });
});
