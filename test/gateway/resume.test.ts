import { EventEmitter } from 'node:events';
import { type Client, Events } from 'discord.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BEFORE_READY_MAX_MS, restoreOnResume } from '../../src/gateway/resume.ts';
import type { SessionKeeper } from '../../src/gateway/sessions.ts';
import { createLogger } from '../../src/log.ts';

const logger = createLogger({ level: 'error', write: () => {} });

/** A client as restoreOnResume sees it: events, readiness, and discord.js's shard-ready check. */
function fakeClient() {
  const emitter = new EventEmitter();
  const checkShardsReady = vi.fn();
  const client = Object.assign(emitter, {
    user: { id: '900' },
    application: { id: '900' },
    isReady: () => false,
    ws: { checkShardsReady },
    guilds: { _add: vi.fn() },
    users: { cache: new Map() },
    actions: { GuildDelete: { handle: vi.fn() } },
  });
  return { client: client as unknown as Client, checkShardsReady, emitter };
}

const keeperWith = (cache: string | undefined): SessionKeeper =>
  ({ takeCache: () => cache }) as unknown as SessionKeeper;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a shard resumed after a restart', () => {
  it('turns ready once its voice channels are rejoined', async () => {
    const { client, checkShardsReady, emitter } = fakeClient();
    let rejoined: () => void = () => {};
    const beforeReady = vi.fn(() => new Promise<void>((resolve) => (rejoined = resolve)));
    restoreOnResume(client, keeperWith('{"user":{},"application":null,"guilds":[]}'), logger, beforeReady);
    emitter.emit(Events.ShardResume, 2, 0);
    await vi.advanceTimersByTimeAsync(100);
    expect(beforeReady).toHaveBeenCalledWith(2);
    expect(checkShardsReady).not.toHaveBeenCalled();
    rejoined();
    await vi.advanceTimersByTimeAsync(0);
    expect(checkShardsReady).toHaveBeenCalledOnce();
  });

  it('does not hold its events back longer than BEFORE_READY_MAX_MS', async () => {
    const { client, checkShardsReady, emitter } = fakeClient();
    restoreOnResume(
      client,
      keeperWith('{"user":{},"application":null,"guilds":[]}'),
      logger,
      () => new Promise(() => {}),
    );
    emitter.emit(Events.ShardResume, 0, 0);
    await vi.advanceTimersByTimeAsync(BEFORE_READY_MAX_MS - 1);
    expect(checkShardsReady).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(checkShardsReady).toHaveBeenCalledOnce();
  });

  it('a resume within the process (no snapshot taken) changes nothing', async () => {
    const { client, checkShardsReady, emitter } = fakeClient();
    const beforeReady = vi.fn(async () => {});
    restoreOnResume(client, keeperWith(undefined), logger, beforeReady);
    emitter.emit(Events.ShardResume, 0, 3);
    await vi.advanceTimersByTimeAsync(BEFORE_READY_MAX_MS);
    expect(beforeReady).not.toHaveBeenCalled();
    expect(checkShardsReady).not.toHaveBeenCalled();
  });
});
