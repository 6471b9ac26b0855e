import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import {
  type AskedShard,
  answerManager,
  askEach,
  askShard,
  type ManagerChannel,
  type ShardAnswers,
  type ShardStatus,
} from '../../src/shard/ipc.ts';

// Both ends of the manager's IPC in one process: a fake discord.js Shard (what the manager holds) wired to a fake
// channel (the shard process's `process`), each message crossing as a JSON copy, as Node's IPC sends it.

const status: ShardStatus = {
  sessions: [
    {
      guildId: '1',
      guildName: 'Server 1',
      channelName: 'Room',
      queueDepth: 2,
      connection: 'ready',
      player: 'playing',
    },
  ],
  problems: [{ at: 1_000, level: 'warn', message: 'voice join timed out', detail: undefined }],
  gatewayConnected: true,
};

const answers = (overrides: Partial<ShardAnswers> = {}): ShardAnswers => ({
  metrics: async () => [],
  readiness: async () => ({ ready: true }),
  status: async () => status,
  ...overrides,
});

/** A shard process (`answerManager` on a fake channel) and the manager's handle on it. */
function fakeShard(id: number, shardAnswers: ShardAnswers | undefined) {
  const shardSide = new EventEmitter();
  const channel = Object.assign(new EventEmitter(), {
    connected: true,
    send: (message: unknown) => {
      const copy = JSON.parse(JSON.stringify(message));
      queueMicrotask(() => shardSide.emit('message', copy));
      return true;
    },
  }) as unknown as ManagerChannel;
  const stop = shardAnswers ? answerManager(shardAnswers, silentLogger, channel) : () => {};
  const shard = Object.assign(shardSide, {
    id,
    process: {} as ChildProcess,
    send: async (message: unknown) => {
      const copy = JSON.parse(JSON.stringify(message));
      queueMicrotask(() => (channel as unknown as EventEmitter).emit('message', copy));
    },
  }) as unknown as AskedShard & EventEmitter;
  return { shard, stop };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('askShard and answerManager', () => {
  it('asks a shard for its live status and gets it back', async () => {
    const { shard, stop } = fakeShard(2, answers());
    // `detail: undefined` does not survive JSON: the page treats a missing detail as none.
    expect(await askShard(shard, 'status', 1_000)).toEqual({
      ...status,
      problems: [{ at: 1_000, level: 'warn', message: 'voice join timed out' }],
    });
    stop();
  });

  it("rejects with the shard's error when it could not answer", async () => {
    const { shard, stop } = fakeShard(1, answers({ status: () => Promise.reject(new Error('not ready')) }));
    await expect(askShard(shard, 'status', 1_000)).rejects.toThrow('shard 1: not ready');
    stop();
  });

  it('answers a question it does not know with an error, not silence', async () => {
    const { shard, stop } = fakeShard(0, answers());
    await expect(askShard(shard, 'nonsense' as 'status', 1_000)).rejects.toThrow(
      'shard 0: unknown question nonsense',
    );
    stop();
  });

  it('rejects after the timeout when the shard says nothing, and stops listening', async () => {
    vi.useFakeTimers();
    const { shard } = fakeShard(3, undefined);
    const asked = askShard(shard, 'status', 5_000);
    const settled = vi.fn();
    asked.catch(settled);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(settled).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    await expect(asked).rejects.toThrow('shard 3 did not answer within 5000 ms');
    expect(shard.listenerCount('message')).toBe(0);
    expect(shard.listenerCount('death')).toBe(0);
  });

  it('rejects at once when the shard process exits while asked', async () => {
    const { shard } = fakeShard(1, undefined);
    const asked = askShard(shard, 'status', 60_000);
    shard.emit('death');
    await expect(asked).rejects.toThrow('shard 1 exited');
  });
});

describe('askEach', () => {
  it('replies for every shard in order: an answer, an error, silence, or no process', async () => {
    vi.useFakeTimers();
    const ok = fakeShard(0, answers());
    const failing = fakeShard(1, answers({ status: () => Promise.reject(new Error('database down')) }));
    const silent = fakeShard(2, undefined);
    const shards = new Map<number, AskedShard>([
      [0, ok.shard],
      [1, failing.shard],
      [2, silent.shard],
      [3, Object.assign(fakeShard(3, answers()).shard, { process: null })],
    ]);
    const replies = askEach(shards, [0, 1, 2, 3, 4], 'status', 2_000);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await replies).toEqual([
      { id: 0, ok: true, value: expect.objectContaining({ gatewayConnected: true }) },
      { id: 1, ok: false, detail: 'shard 1: database down' },
      { id: 2, ok: false, detail: 'shard 2 did not answer within 2000 ms' },
      { id: 3, ok: false, detail: 'The shard process is not running.' },
      { id: 4, ok: false, detail: 'The shard process is not running.' },
    ]);
  });
});
