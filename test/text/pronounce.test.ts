import { describe, expect, it } from 'vitest';
import { countCharacters, normaliseMessage, normaliseSpeech } from '../../src/text/normalise.ts';
import { applyPronunciations, compilePronunciations } from '../../src/text/pronounce.ts';

const dictionary = compilePronunciations([
  { word: 'gg', spoken: 'good game' },
  { word: 'Siobhan', spoken: 'shiv awn' },
  { word: 'New', spoken: 'knew' },
  { word: 'New York', spoken: 'the big apple' },
  { word: 'c++', spoken: 'C plus plus' },
  { word: 'Zoë', spoken: 'Zoey' },
]);

describe('applyPronunciations', () => {
  it.each([
    ['gg everyone', 'good game everyone'],
    ['GG', 'good game'],
    ['eggs', 'eggs'], // not a whole word
    ['gg_wp', 'gg_wp'],
    ['gg, gg!', 'good game, good game!'],
    ['Siobhan is here', 'shiv awn is here'],
    ['I love New York', 'I love the big apple'], // longest first
    ['new  york', 'the big apple'], // any case, any inner spacing
    ['New stuff', 'knew stuff'],
    ['c++ rocks', 'C plus plus rocks'],
    ['zoë and Zoëlle', 'Zoey and Zoëlle'],
    ['', ''],
  ])('%j → %j', (text, spoken) => {
    expect(applyPronunciations(text, dictionary)).toBe(spoken);
  });

  it('does not re-scan what it replaced', () => {
    const chain = compilePronunciations([
      { word: 'a', spoken: 'b' },
      { word: 'b', spoken: 'c' },
    ]);
    expect(applyPronunciations('a b', chain)).toBe('b c');
  });

  it('leaves text alone with no entries', () => {
    expect(applyPronunciations('gg', compilePronunciations([]))).toBe('gg');
  });
});

describe('the normaliser applies the dictionary', () => {
  const options = {
    userName: () => undefined,
    roleName: () => undefined,
    channelName: () => undefined,
    linkDomains: false,
    emoji: 'name' as const,
    repeatCap: 3,
    pronunciations: compilePronunciations([{ word: 'gg', spoken: 'good game' }]),
  };
  it('before the length limit, to the text and the author’s name', () => {
    const message = { content: 'gg gg gg', attachments: [], stickers: [] };
    expect(normaliseMessage(message, { ...options, maxChars: 300, authorPrefix: 'gg' })).toBe(
      'good game said, good game good game good game',
    );
    // The limit counts the spoken text: three "good game" do not fit in 20 characters.
    expect(countCharacters(normaliseMessage(message, { ...options, maxChars: 20 }))).toBeLessThanOrEqual(20);
    expect(normaliseMessage(message, { ...options, maxChars: 20 })).toMatch(/^good game/);
  });

  it('to /speak text', () => {
    expect(normaliseSpeech('GG!', { pronunciations: options.pronunciations })).toBe('good game!');
    expect(normaliseSpeech('GG!', {})).toBe('GG!');
  });
});
