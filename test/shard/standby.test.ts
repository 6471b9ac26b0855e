import { EventEmitter } from 'node:events';
import type { Shard, ShardingManager } from 'discord.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { createStandbys, spawnShards, tellManager, untilReady } from '../../src/shard/standby.ts';

// A shard standing by for its lease, between the shard process (tellManager) and its manager (spawnShards): a fake
// discord.js Shard whose process is a message line the test speaks on, each message a JSON copy as Node's IPC sends.

/** The manager's handle on a shard; `say` is the shard process telling its manager (through tellManager). */
function fakeShard(id: number) {
  const shard = Object.assign(new EventEmitter(), {
    id,
    spawnedWith: [] as number[],
    spawn: async (timeout: number) => {
      shard.spawnedWith.push(timeout);
      return {};
    },
  });
  const line = {
    connected: true,
    send: ((message: unknown, _handle: unknown, _options: unknown, callback?: () => void) => {
      shard.emit('message', JSON.parse(JSON.stringify(message)));
      callback?.();
      return true;
    }) as NodeJS.Process['send'],
  };
  return {
    shard,
    handle: shard as unknown as Shard,
    say: (phase: Parameters<typeof tellManager>[0]) => tellManager(phase, line),
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('untilReady (the manager waiting for one shard)', () => {
  it('gives up on a shard that is not ready in time, as discord.js would', async () => {
    vi.useFakeTimers();
    const { shard, handle } = fakeShard(0);
    const ready = untilReady(handle, 60_000);
    const failed = expect(ready).rejects.toThrow('shard 0 was not ready within 60 s');
    await vi.advanceTimersByTimeAsync(60_000);
    await failed;
    // discord.js itself does not time the spawn, nor the respawns after a death.
    expect(shard.spawnedWith).toEqual([-1]);
  });

  it('waits for a shard standing by as long as it stands by, then times it from when it runs its shards', async () => {
    vi.useFakeTimers();
    const { shard, handle, say } = fakeShard(1);
    let outcome: string | undefined;
    untilReady(handle, 60_000).then(
      () => {
        outcome = 'ready';
      },
      (error: Error) => {
        outcome = error.message;
      },
    );
    await vi.advanceTimersByTimeAsync(1_000);
    say({ standingBy: 'shard 1 of 2 on other-host, pid 42' });
    // Hours behind another Herald are not a failure to start.
    await vi.advanceTimersByTimeAsync(3 * 3_600_000);
    expect(outcome).toBeUndefined();
    say('running');
    await vi.advanceTimersByTimeAsync(59_000);
    expect(outcome).toBeUndefined();
    shard.emit('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome).toBe('ready');
  });

  it('fails when the shard’s process exits before it is ready', async () => {
    const { shard, handle } = fakeShard(2);
    const ready = untilReady(handle, 60_000);
    shard.emit('death', {});
    await expect(ready).rejects.toThrow("shard 2's process exited before it was ready");
  });
});

describe('spawnShards', () => {
  it('starts each shard once the one before is ready and the identify pause is over', async () => {
    vi.useFakeTimers();
    const shards = [fakeShard(3), fakeShard(5)];
    const created: number[] = [];
    const manager = {
      createShard(id: number) {
        created.push(id);
        const found = shards.find((s) => s.shard.id === id);
        if (!found) throw new Error(`no shard ${id}`);
        return found.handle;
      },
    } as unknown as ShardingManager;
    const done = spawnShards(manager, [3, 5], { delayMs: 5_500, readyTimeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(created).toEqual([3]);
    shards[0]?.shard.emit('ready');
    await vi.advanceTimersByTimeAsync(5_499);
    expect(created).toEqual([3]);
    await vi.advanceTimersByTimeAsync(1);
    expect(created).toEqual([3, 5]);
    shards[1]?.shard.emit('ready');
    await done;
  });
});

describe('the manager’s record of standing-by shards', () => {
  it('knows who runs a standing-by shard until it runs it itself, or its process dies', () => {
    const standbys = createStandbys(silentLogger);
    const { shard, handle, say } = fakeShard(0);
    standbys.follow(handle);
    expect(standbys.holders(0)).toBeUndefined();
    say({ standingBy: 'shard 0 of 1 on other-host, pid 42' });
    expect(standbys.holders(0)).toBe('shard 0 of 1 on other-host, pid 42');
    say('running');
    expect(standbys.holders(0)).toBeUndefined();
    say({ standingBy: 'shard 0 of 1 on other-host, pid 43' });
    shard.emit('death', {});
    expect(standbys.holders(0)).toBeUndefined();
  });

  it('tellManager says nothing outside a manager’s child process', () => {
    const send = vi.fn();
    tellManager('running', { connected: false, send });
    tellManager('running', { connected: true });
    expect(send).not.toHaveBeenCalled();
  });
});
