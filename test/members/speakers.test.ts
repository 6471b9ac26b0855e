import { describe, expect, it } from 'vitest';
import { chooseSpeaker, describeLanguages, findSpeaker, rankSpeakers } from '../../src/members/speakers.ts';
import type { Speaker } from '../../src/tts/index.ts';

const speaker = (id: string, name: string, languages: string[] | null = null): Speaker => ({
  id,
  name,
  voiceKey: id,
  gender: null,
  languages,
});
const ada = speaker('11111111-1111-4111-8111-111111111111', 'Ada');
const bea = speaker('22222222-2222-4222-8222-222222222222', 'Beatrice', ['en']);
const carl = speaker('33333333-3333-4333-8333-333333333333', 'Carl');
const all = [ada, bea, carl];
const gone = '99999999-9999-4999-8999-999999999999';

describe('chooseSpeaker', () => {
  it.each([
    ['option by name, any case', { option: 'bEaTrIcE', member: carl.id }, bea, 'option'],
    ['option by id', { option: carl.id, member: bea.id }, carl, 'option'],
    ['member voice over server default', { member: bea.id, server: carl.id }, bea, 'member'],
    ['server default over config', { server: carl.id, config: 'Beatrice' }, carl, 'server'],
    ['config by name', { config: 'beatrice' }, bea, 'config'],
    ['first listed when nothing is chosen', {}, ada, 'first'],
    ['a member voice the service dropped falls through', { member: gone, server: carl.id }, carl, 'server'],
    ['a server default the service dropped falls through', { server: gone, config: bea.id }, bea, 'config'],
    ['blank option is no option', { option: '  ', member: bea.id }, bea, 'member'],
  ] as const)('%s', (_name, choices, expected, source) => {
    expect(chooseSpeaker(all, choices)).toEqual({ kind: 'chosen', speaker: expected, source });
  });

  it('refuses an option that matches nothing instead of silently using another voice', () => {
    expect(chooseSpeaker(all, { option: 'Zed', member: ada.id })).toEqual({
      kind: 'unknown-option',
      option: 'Zed',
    });
  });

  it('reports an empty speaker list', () => {
    expect(chooseSpeaker([], {})).toEqual({ kind: 'no-speakers' });
  });
});

describe('rankSpeakers', () => {
  const many = [speaker('a', 'Marta'), speaker('b', 'Amara'), speaker('c', 'Mark'), speaker('d', 'Zoe')];
  it('puts prefix matches before substring matches', () => {
    expect(rankSpeakers(many, 'mar').map((s) => s.name)).toEqual(['Marta', 'Mark', 'Amara']);
  });
  it('caps the list at 25', () => {
    const lots = Array.from({ length: 40 }, (_, i) => speaker(`id${i}`, `Voice ${i}`));
    expect(rankSpeakers(lots, 'voice')).toHaveLength(25);
    expect(rankSpeakers(lots, '')).toHaveLength(25);
  });
  it('finds nothing for an unmatched query', () => {
    expect(rankSpeakers(many, 'qq')).toEqual([]);
  });
});

describe('findSpeaker and describeLanguages', () => {
  it('prefers an exact id over a name', () => {
    const tricky = [speaker('x', 'Y'), speaker('Y', 'Z')];
    expect(findSpeaker(tricky, 'Y')?.name).toBe('Z');
  });
  it('says "all" for unrestricted speakers', () => {
    expect(describeLanguages(ada)).toBe('all');
    expect(describeLanguages(bea)).toBe('en');
  });
});
