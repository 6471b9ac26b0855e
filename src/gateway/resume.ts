import { type Client, Events } from 'discord.js';
import type { Logger } from '../log.ts';
import { type CacheSnapshot, restoreShard } from './cache-snapshot.ts';
import type { SessionKeeper } from './sessions.ts';

/**
 * After a restart a shard that RESUMEd gets no READY and no GUILD_CREATE: discord.js's cache of its servers stays
 * empty, and discord.js itself never turns ready (it holds every other event back until then). So on the RESUMED of
 * a session taken from the database, the cache snapshot its planned stop wrote is put back, and discord.js is told
 * that the shard is ready: `ClientReady` comes (Herald's restart recovery rejoins the voice channels on it) and the
 * events held back, the replayed ones first, are handled against that cache. `beforeReady` runs in between (the
 * shard's voice channels rejoined first, so that a replayed message in an auto-read channel is read in voice).
 */
export function restoreOnResume(
  client: Client,
  keeper: SessionKeeper,
  logger: Logger,
  beforeReady: (shardId: number) => Promise<void>,
): void {
  client.on(Events.ShardResume, async (shardId, replayed) => {
    const cache = keeper.takeCache(shardId);
    // A resume within this process (a dropped connection): discord.js's cache is whole.
    if (cache === undefined || client.isReady()) return;
    try {
      const snapshot = JSON.parse(cache) as CacheSnapshot;
      restoreShard(client, shardId, snapshot);
      logger.info('resumed the gateway session after a restart', {
        shardId,
        servers: snapshot.guilds.length,
        replayed,
      });
    } catch (error) {
      logger.error('could not restore the cache kept for a resumed session', { shardId, err: error });
    }
    // Never rejects (the caller logs its own failures); the held-back events wait for it.
    await beforeReady(shardId);
    // As after a READY: the shard turned ready (a sharding manager waits for this, through ShardClientUtil).
    client.emit(Events.ShardReady, shardId, undefined);
    // discord.js turns ready when every shard is; this one's status is Ready since the RESUMED.
    (client.ws as unknown as { checkShardsReady(): void }).checkShardsReady();
  });
}
