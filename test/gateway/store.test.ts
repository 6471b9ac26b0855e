import { expect, it } from 'vitest';
import { createGatewaySessionStore, type GatewaySession } from '../../src/gateway/index.ts';
import { describeEachBackend } from '../support/databases.ts';

const session = (over: Partial<GatewaySession> = {}): GatewaySession => ({
  shardId: 2,
  shardCount: 4,
  sessionId: 'session-a',
  sequence: 41,
  resumeUrl: 'wss://resume.example/',
  ...over,
});

describeEachBackend('the gateway session store', (backend) => {
  it('keeps a session per shard, the sequence moving on and a planned stop adding the cache', async () => {
    const target = await backend.fresh();
    const store = await createGatewaySessionStore(target.open());
    expect(await store.load(2)).toBeUndefined();
    await store.save(session(), 1_000);
    await store.save(session({ sequence: 2 ** 40 }), 2_000);
    await store.saveAtStop(session({ sequence: 2 ** 40 + 1 }), '{"guilds":[]}', 3_000);
    // Another process (a restart) reads what this one wrote.
    const again = await createGatewaySessionStore(target.open());
    expect(await again.load(2)).toEqual({
      ...session({ sequence: 2 ** 40 + 1 }),
      updatedAt: 3_000,
      cache: '{"guilds":[]}',
    });
    expect(await again.load(3)).toBeUndefined();
    await again.dropCache(2);
    expect((await again.load(2))?.cache).toBeNull();
    await again.remove(2);
    expect(await again.load(2)).toBeUndefined();
  });

  it('a running session drops the cache; a stop never overwrites another session of the shard', async () => {
    const store = await createGatewaySessionStore((await backend.fresh()).open());
    await store.saveAtStop(session(), '{}', 1_000);
    await store.save(session({ sequence: 50 }), 2_000);
    expect((await store.load(2))?.cache).toBeNull();
    // Another Herald took the shard over and identified: the old one's stop leaves that session alone.
    await store.save(session({ sessionId: 'session-b', sequence: 3 }), 3_000);
    await store.saveAtStop(session({ sequence: 60 }), '{}', 4_000);
    expect(await store.load(2)).toMatchObject({ sessionId: 'session-b', sequence: 3, cache: null });
  });
});
