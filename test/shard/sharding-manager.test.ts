/**
 * On a restart the shards wait for their manager to spawn them: the manager's way to the spawn loads discord.js's
 * ShardingManager alone, never the whole library (450 ms of a restart on 2 cores).
 */
import { execFileSync } from 'node:child_process';
import { ShardingManager } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { loadShardingManager } from '../../src/shard/sharding-manager.ts';

describe('the sharding manager’s load', () => {
  it('is discord.js’s own ShardingManager class', () => {
    expect(loadShardingManager()).toBe(ShardingManager);
  });

  it('spawns its shards with discord.js’s ShardingManager loaded, not the whole library', () => {
    // A fresh process: this one has discord.js loaded already. It imports what src/shard/main.ts imports before
    // the spawn, and lists discord.js's files it loaded.
    const script = `
      import { createRequire } from 'node:module';
      await import('./src/config.ts');
      await import('./src/log.ts');
      await import('./src/shard/manager.ts');
      const { loadShardingManager } = await import('./src/shard/sharding-manager.ts');
      loadShardingManager();
      const loaded = Object.keys(createRequire(import.meta.url).cache);
      console.log(JSON.stringify(loaded.filter((file) => file.includes('/discord.js/src/'))));
    `;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url),
      encoding: 'utf8',
    });
    const files = JSON.parse(output.trim().split('\n').at(-1) ?? '[]') as string[];
    expect(files.some((file) => file.endsWith('/sharding/ShardingManager.js'))).toBe(true);
    expect(files.filter((file) => file.endsWith('/discord.js/src/index.js'))).toEqual([]);
  });
});
