import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ShardingManager } from 'discord.js';

const require = createRequire(import.meta.url);

/**
 * discord.js's own `ShardingManager` class, loaded without the rest of discord.js: the manager needs only this
 * class (and `Shard`, which it loads), about 130 ms of loading on 2 cores where the whole library takes 450 ms, and
 * on a restart the shards wait for the manager to spawn them. The package's `exports` name only its main file, so
 * the class's file is found beside it; should a later discord.js move it, the whole library is loaded instead. The
 * class is the same object either way (one module cache).
 */
export function loadShardingManager(): typeof ShardingManager {
  try {
    const main = require.resolve('discord.js');
    const loaded: unknown = require(join(dirname(main), 'sharding', 'ShardingManager.js'));
    if (typeof loaded === 'function' && loaded.name === 'ShardingManager')
      return loaded as typeof ShardingManager;
  } catch {
    // Moved or renamed in this discord.js: the whole library below.
  }
  return (require('discord.js') as typeof import('discord.js')).ShardingManager;
}
