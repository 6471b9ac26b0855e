/**
 * The stores main added (audio cache rows, members' settings, voice state kept across restarts) on each engine:
 * their migrations and SQL run on SQLite and PostgreSQL alike.
 */
import { expect, it } from 'vitest';
import { createCacheStore } from '../../src/cache/index.ts';
import { createMemberStore } from '../../src/members/index.ts';
import { createVoiceStateStore } from '../../src/storage/voice-state.ts';
import { describeEachBackend } from '../support/databases.ts';

describeEachBackend('cache, member and voice-state stores', (backend) => {
  it('keeps the cache secret, each server’s choice and its savings', async () => {
    const target = await backend.fresh();
    const store = await createCacheStore(target.open());
    const secret = await store.secret();
    expect(secret).toHaveLength(32);
    expect((await (await createCacheStore(target.open())).secret()).equals(secret)).toBe(true);
    expect(await store.guildEnabled('g')).toBe(true);
    await store.setGuildEnabled('g', false);
    expect(await store.guildEnabled('g')).toBe(false);
    const at = Date.UTC(2026, 0, 2, 12);
    await store.recordHit({ guildId: 'g', userId: 'u', characters: 10, savedUsd: 0.25, at });
    await store.recordHit({ guildId: 'g', userId: 'u', characters: 5, savedUsd: 0.5, at: at + 86_400_000 });
    expect(await store.savings('g', '2026-01-02')).toEqual({
      day: { hits: 1, characters: 10, usd: 0.25 },
      total: { hits: 2, characters: 15, usd: 0.75 },
    });
  });

  it('keeps dictionaries, blocks, spoken names and temperatures', async () => {
    const store = await createMemberStore((await backend.fresh()).open());
    expect(await store.addWord('g', 'GG', 'good game')).toEqual({ kind: 'added' });
    expect(await store.addWord('g', 'gg', 'gee gee')).toEqual({ kind: 'replaced', previous: 'good game' });
    expect(await store.dictionary('g')).toEqual([{ word: 'gg', spoken: 'gee gee' }]);
    expect(await store.removeWord('g', 'GG')).toBe(true);
    expect(await store.setBlocked('g', 'u', true)).toBe(true);
    expect(await store.setBlocked('g', 'u', true)).toBe(false);
    expect(await store.blockedMembers('g')).toEqual(['u']);
    await store.setSpokenName('g', 'u', 'Yu');
    await store.setMemberTemperature('g', 'u', 1.4);
    await store.setGuildTemperature('g', 0.7);
    expect(await store.spokenName('g', 'u')).toBe('Yu');
    expect(await store.memberTemperature('g', 'u')).toBe(1.4);
    expect(await store.guildTemperature('g')).toBe(0.7);
  });

  it('keeps voice sessions and their queues across a reopen', async () => {
    const target = await backend.fresh();
    const store = await createVoiceStateStore(target.open());
    const utterance = { text: 'hi', speakerId: 's', speakerName: 'S', userId: 'u', userName: 'U', key: null };
    await store.saveAll([
      {
        guildId: 'g',
        session: { guildId: 'g', channelId: 'c', announceChannelId: null, queue: [utterance] },
      },
    ]);
    await store.saveAll([
      { guildId: 'h', session: { guildId: 'h', channelId: 'd', announceChannelId: 't', queue: [] } },
    ]);
    await store.remove('h');
    expect(await (await createVoiceStateStore(target.open())).load()).toEqual([
      { guildId: 'g', channelId: 'c', announceChannelId: null, queue: [utterance] },
    ]);
  });

  it('applies many servers’ sessions in one transaction, all or none', async () => {
    const target = await backend.fresh();
    const store = await createVoiceStateStore(target.open());
    const session = (guildId: string, text: string) => ({
      guildId,
      channelId: `c-${guildId}`,
      announceChannelId: null,
      queue: [{ text, speakerId: 's', speakerName: 'S', userId: 'u', userName: 'U', key: null }],
    });
    await store.saveAll([{ guildId: 'gone', session: session('gone', 'bye') }]);
    await store.saveAll([
      { guildId: 'a', session: session('a', 'one') },
      { guildId: 'gone', session: null },
      { guildId: 'b', session: session('b', 'two') },
    ]);
    const byGuild = async () =>
      (await (await createVoiceStateStore(target.open())).load())
        .map((s) => `${s.guildId}:${s.queue.map((u) => u.text).join(',')}`)
        .sort();
    expect(await byGuild()).toEqual(['a:one', 'b:two']);
    // A change that fails (a NULL channel) takes the batch's others with it: the store holds what it held.
    const broken = { ...session('a', 'three'), channelId: null as unknown as string };
    await expect(
      store.saveAll([
        { guildId: 'b', session: null },
        { guildId: 'a', session: broken },
      ]),
    ).rejects.toThrow();
    expect(await byGuild()).toEqual(['a:one', 'b:two']);
  });
});
