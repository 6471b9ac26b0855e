import type { ClientOptions } from 'discord.js';
import { type ShardConfig, shardIdsOf, shardOfGuild } from './config.ts';

/** The Client's shard options: the shards of this process, or `auto` (discord.js asks Discord how many). */
export function clientShardOptions(shards: ShardConfig): Pick<ClientOptions, 'shards' | 'shardCount'> {
  if (shards.count === 'auto') return { shards: 'auto' };
  return { shards: [...shardIdsOf(shards, shards.count)], shardCount: shards.count };
}

/**
 * True for a server on one of the client's shards (read after login, when `auto` is resolved); the others'
 * servers are another process's.
 */
export function ownsGuild(options: Pick<ClientOptions, 'shards' | 'shardCount'>, guildId: string): boolean {
  return runsShard(options, shardOfGuild(guildId, options.shardCount ?? 1));
}

/** True when the client runs shard `id` (read after login, when `auto` is resolved). */
export function runsShard(options: Pick<ClientOptions, 'shards'>, id: number): boolean {
  return Array.isArray(options.shards) && options.shards.includes(id);
}
