import { type SessionInfo, SimpleShardingStrategy, type WebSocketManager } from '@discordjs/ws';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GatewaySession, GatewaySessionStore, StoredGatewaySession } from '../../src/gateway/index.ts';
import { createSessionKeeper } from '../../src/gateway/sessions.ts';
import { createLogger } from '../../src/log.ts';

const logger = createLogger({ level: 'error', write: () => {} });

/** A store in memory that records every write. */
function fakeStore(rows: StoredGatewaySession[] = []) {
  const writes: string[] = [];
  const table = new Map(rows.map((row) => [row.shardId, row]));
  const store: GatewaySessionStore = {
    load: async (shardId) => table.get(shardId),
    async save(s: GatewaySession, at: number) {
      writes.push(`save ${s.shardId} ${s.sessionId} ${s.sequence}`);
      table.set(s.shardId, { ...s, updatedAt: at, cache: null });
    },
    async saveAtStop(s, cache, at) {
      writes.push(`stop ${s.shardId} ${s.sessionId} ${s.sequence} ${cache}`);
      table.set(s.shardId, { ...s, updatedAt: at, cache });
    },
    async dropCache(shardId) {
      writes.push(`drop-cache ${shardId}`);
    },
    async remove(shardId) {
      writes.push(`remove ${shardId}`);
      table.delete(shardId);
    },
  };
  return { store, writes };
}

/** discord.js's side: its own Map of sessions, as its WebSocketManager passes it to @discordjs/ws. */
function fakeManager() {
  const own = new Map<number, SessionInfo | null>();
  const manager = {
    options: {
      retrieveSessionInfo: (id: number) => own.get(id) ?? null,
      updateSessionInfo: (id: number, info: SessionInfo | null) => void own.set(id, info),
    },
    getShardCount: async () => 4,
    getShardIds: async () => [0, 1, 2, 3],
    fetchGatewayInformation: async () => ({}),
    emit: () => true,
  };
  return { own, manager: manager as unknown as WebSocketManager };
}

/** The session view @discordjs/ws's shards read and write through. */
const viewOf = (strategy: unknown): WebSocketManager['options'] =>
  (strategy as { manager: WebSocketManager }).manager.options;

const info = (sequence: number, sessionId = 's1'): SessionInfo => ({
  sessionId,
  sequence,
  resumeURL: 'wss://resume/',
  shardId: 1,
  shardCount: 4,
});
const stored = (over: Partial<StoredGatewaySession> = {}): StoredGatewaySession => ({
  shardId: 1,
  shardCount: 4,
  sessionId: 'old',
  sequence: 99,
  resumeUrl: 'wss://resume/',
  updatedAt: 100_000,
  cache: '{"guilds":[]}',
  ...over,
});

beforeEach(() => {
  vi.useFakeTimers({ now: 130_000 });
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('the gateway session keeper', () => {
  it('writes a new session at once and its sequences at most once a second', async () => {
    const { store, writes } = fakeStore();
    const keeper = createSessionKeeper();
    keeper.attach({ store, logger, snapshot: () => '{}' });
    const { own, manager } = fakeManager();
    const view = viewOf(keeper.buildStrategy(manager));
    expect(await view.retrieveSessionInfo(1)).toBeNull();
    for (let s = 1; s <= 50; s += 1) await view.updateSessionInfo(1, info(s));
    await vi.advanceTimersByTimeAsync(0);
    expect(writes).toEqual(['save 1 s1 1']);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(writes).toEqual(['save 1 s1 1', 'save 1 s1 50']);
    // discord.js's own Map is kept in step (its RESUMED handler reads it).
    expect(own.get(1)?.sequence).toBe(50);
  });

  it('offers a fresh stored session of the same count, with its cache, once', async () => {
    const { store, writes } = fakeStore([stored()]);
    const keeper = createSessionKeeper();
    keeper.attach({ store, logger, snapshot: () => '{}' });
    const { own, manager } = fakeManager();
    const view = viewOf(keeper.buildStrategy(manager));
    expect(await view.retrieveSessionInfo(1)).toMatchObject({
      sessionId: 'old',
      sequence: 99,
      shardCount: 4,
    });
    expect(own.get(1)?.sessionId).toBe('old');
    expect(keeper.takeCache(1)).toBe('{"guilds":[]}');
    expect(keeper.takeCache(1)).toBeUndefined();
    await vi.advanceTimersByTimeAsync(0);
    expect(writes).toEqual(['drop-cache 1']);
    // Discord refused it (op 9): the next connection identifies, whatever the database still says.
    await view.updateSessionInfo(1, null);
    expect(await view.retrieveSessionInfo(1)).toBeNull();
  });

  it.each([
    ['older than the resume window', stored({ updatedAt: 130_000 - 120_001 })],
    ['of another shard count', stored({ shardCount: 2 })],
    ['left by a crash (no cache)', stored({ cache: null })],
  ])('ignores a stored session %s: IDENTIFY', async (_why, row) => {
    const { store } = fakeStore([row]);
    const keeper = createSessionKeeper();
    keeper.attach({ store, logger, snapshot: () => '{}' });
    const view = viewOf(keeper.buildStrategy(fakeManager().manager));
    expect(await view.retrieveSessionInfo(1)).toBeNull();
    expect(keeper.takeCache(1)).toBeUndefined();
  });

  it('forgets a session Discord ended, but a planned stop closes with 4200 and keeps it with the cache', async () => {
    const destroy = vi.spyOn(SimpleShardingStrategy.prototype, 'destroy');
    const { store, writes } = fakeStore();
    const keeper = createSessionKeeper();
    keeper.attach({ store, logger, snapshot: (shardId) => `{"shard":${shardId}}` });
    const { own, manager } = fakeManager();
    const view = viewOf(keeper.buildStrategy(manager));
    await view.updateSessionInfo(1, info(5, 'first'));
    await view.updateSessionInfo(1, null);
    await view.updateSessionInfo(1, info(1, 'second'));
    await view.updateSessionInfo(1, info(7, 'second'));
    await vi.advanceTimersByTimeAsync(0);
    expect(writes).toEqual(['save 1 first 5', 'remove 1', 'save 1 second 1']);

    const closing = keeper.closeResumable();
    // @discordjs/ws erases the session of a shard it destroys without `recover`: not while Herald stops on purpose.
    await view.updateSessionInfo(1, null);
    await closing;
    expect(destroy).toHaveBeenCalledWith(expect.objectContaining({ code: 4200 }));
    expect(writes.slice(3)).toEqual(['stop 1 second 7 {"shard":1}']);
    expect(own.get(1)?.sessionId).toBe('second');
  });
});
