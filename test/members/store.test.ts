import { describe, expect, it } from 'vitest';
import {
  createMemberStore,
  MEMBER_LIMITS,
  resolveTemperature,
  tunedSynthesize,
} from '../../src/members/index.ts';
import { openDatabase } from '../../src/storage/index.ts';
import type { SpeechRequest, Synthesize } from '../../src/voice/session.ts';

const store = () => createMemberStore(openDatabase({ kind: 'sqlite', path: ':memory:' }));

describe('the member store', () => {
  it('keeps a dictionary per server, replacing a word whatever its case, and forgets words', async () => {
    const s = await store();
    expect(await s.addWord('g', 'GG', 'good game')).toEqual({ kind: 'added' });
    expect(await s.addWord('g', 'gg', 'gee gee')).toEqual({ kind: 'replaced', previous: 'good game' });
    expect(await s.addWord('g', '  New   York ', ' the  big apple ')).toEqual({ kind: 'added' });
    expect(await s.dictionary('g')).toEqual([
      { word: 'gg', spoken: 'gee gee' },
      { word: 'New York', spoken: 'the big apple' },
    ]);
    expect(await s.dictionary('other')).toEqual([]);
    expect(await s.removeWord('g', 'new york')).toBe(true);
    expect(await s.removeWord('g', 'new york')).toBe(false);
  });

  it('bounds the dictionary: 500 words of at most 100 characters, never empty', async () => {
    const s = await store();
    for (let i = 0; i < MEMBER_LIMITS.dictionaryEntries; i++) {
      expect((await s.addWord('g', `word${i}`, 'x')).kind).toBe('added');
    }
    expect(await s.addWord('g', 'one-more', 'x')).toEqual({ kind: 'full', limit: 500 });
    // Replacing an existing word still works when full.
    expect((await s.addWord('g', 'word1', 'y')).kind).toBe('replaced');
    expect(await s.addWord('h', 'a'.repeat(101), 'x')).toEqual({ kind: 'too-long', limit: 100 });
    expect(await s.addWord('h', 'a', 'b'.repeat(101))).toEqual({ kind: 'too-long', limit: 100 });
    expect((await s.addWord('h', 'a'.repeat(100), 'b'.repeat(100))).kind).toBe('added');
    expect(await s.addWord('h', '  ', 'x')).toEqual({ kind: 'empty' });
  });

  it('blocks and unblocks, saying whether anything changed', async () => {
    const s = await store();
    expect(await s.setBlocked('g', 'u', true)).toBe(true);
    expect(await s.setBlocked('g', 'u', true)).toBe(false);
    expect(await s.blocked('g', 'u')).toBe(true);
    expect(await s.blocked('h', 'u')).toBe(false);
    expect(await s.blockedMembers('g')).toEqual(['u']);
    expect(await s.setBlocked('g', 'u', false)).toBe(true);
    expect(await s.blockedMembers('g')).toEqual([]);
  });

  it('keeps spoken names and temperatures apart per member, and refuses out-of-range values', async () => {
    const s = await store();
    await s.setSpokenName('g', 'u', 'Bobby');
    await s.setMemberTemperature('g', 'u', 1.4);
    expect(await s.spokenName('g', 'u')).toBe('Bobby');
    expect(await s.memberTemperature('g', 'u')).toBe(1.4);
    await s.setSpokenName('g', 'u', null);
    expect(await s.spokenName('g', 'u')).toBeNull();
    expect(await s.memberTemperature('g', 'u')).toBe(1.4);
    await expect(s.setMemberTemperature('g', 'u', 2.5)).rejects.toThrow(RangeError);
    await expect(s.setGuildTemperature('g', 0.4)).rejects.toThrow(RangeError);
    await expect(s.setSpokenName('g', 'u', 'x'.repeat(33))).rejects.toThrow(RangeError);
  });
});

describe('temperature', () => {
  it('is the member’s, else the server’s, else the service default', async () => {
    const s = await store();
    expect(await resolveTemperature(s, 'g', 'u')).toBeUndefined();
    await s.setGuildTemperature('g', 0.7);
    expect(await resolveTemperature(s, 'g', 'u')).toBe(0.7);
    await s.setMemberTemperature('g', 'u', 1.9);
    expect(await resolveTemperature(s, 'g', 'u')).toBe(1.9);
  });

  it('is added to each request in the current form only, never over one the request set', async () => {
    const s = await store();
    await s.setMemberTemperature('g', 'u', 1.2);
    const seen: (number | undefined)[] = [];
    const inner: Synthesize = async (request) => {
      seen.push(request.temperature);
      throw new Error('not needed');
    };
    const request: SpeechRequest = {
      text: 'x',
      speaker: { id: 's', name: 'S', voiceKey: 's', gender: null, languages: null },
      requestedBy: { id: 'u', name: 'u' },
      onFailure: () => {},
    };
    const signal = new AbortController().signal;
    await tunedSynthesize(inner, { store: s, form: 'current' })(request, signal, 'g').catch(() => {});
    await tunedSynthesize(inner, { store: s, form: 'current' })(
      { ...request, temperature: 0.6 },
      signal,
      'g',
    ).catch(() => {});
    await tunedSynthesize(inner, { store: s, form: 'variant' })(request, signal, 'g').catch(() => {});
    expect(seen).toEqual([1.2, 0.6, undefined]);
  });
});
