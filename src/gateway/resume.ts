import { type Client, Events } from 'discord.js';
import type { Logger } from '../log.ts';
import { type CacheSnapshot, restoreShard } from './cache-snapshot.ts';
import type { SessionKeeper } from './sessions.ts';

/** How long a resumed shard's held-back events wait for its voice channels to be rejoined, at the most. */
export const BEFORE_READY_MAX_MS = 5_000;

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
  // discord.js handles a replayed GUILD_CREATE or GUILD_DELETE at once, even before it is ready: before the
  // snapshot is back. A server joined meanwhile is then already cached (the snapshot must not overwrite it), and a
  // server left meanwhile was not: it is deleted again once the snapshot is back. Only ids are kept.
  const early = new Map<number, { created: Set<string>; deleted: Set<string> }>();
  client.on(
    Events.Raw,
    (packet: { t?: string; d?: { id?: string; unavailable?: boolean } }, shardId: number) => {
      if (client.isReady() || (packet.t !== 'GUILD_CREATE' && packet.t !== 'GUILD_DELETE') || !packet.d?.id)
        return;
      const seen = early.get(shardId) ?? { created: new Set<string>(), deleted: new Set<string>() };
      early.set(shardId, seen);
      if (packet.t === 'GUILD_CREATE') seen.created.add(packet.d.id);
      else if (!packet.d.unavailable) seen.deleted.add(packet.d.id);
    },
  );
  // A shard that identified has its cache from READY: nothing to correct.
  client.on(Events.ShardReady, (shardId) => early.delete(shardId));
  client.on(Events.ShardResume, async (shardId, replayed) => {
    const cache = keeper.takeCache(shardId);
    const seen = early.get(shardId);
    early.delete(shardId);
    // A resume within this process (a dropped connection): discord.js's cache is whole.
    if (cache === undefined || client.isReady()) return;
    try {
      const snapshot = JSON.parse(cache) as CacheSnapshot;
      restoreShard(client, shardId, {
        ...snapshot,
        guilds: snapshot.guilds.filter((guild) => !seen?.created.has(String(guild.id))),
      });
      // discord.js's own GUILD_DELETE action: the server and its channels leave the cache, GuildDelete is emitted.
      const actions = (client as unknown as { actions: { GuildDelete: { handle(d: { id: string }): void } } })
        .actions;
      for (const id of seen?.deleted ?? []) actions.GuildDelete.handle({ id });
      logger.info('resumed the gateway session after a restart', {
        shardId,
        servers: snapshot.guilds.length,
        replayed,
      });
    } catch (error) {
      logger.error('could not restore the cache kept for a resumed session', { shardId, err: error });
    }
    // Never rejects (the caller logs its own failures). The held-back events wait for it, but not for ever: a TTS
    // service slow to list its voices must not keep a whole shard deaf.
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      beforeReady(shardId).then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), BEFORE_READY_MAX_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!waited)
      logger.warn('voice channels still being rejoined; handling the replayed events meanwhile', { shardId });
    // As after a READY: the shard turned ready (a sharding manager waits for this, through ShardClientUtil).
    client.emit(Events.ShardReady, shardId, undefined);
    // discord.js turns ready when every shard is; this one's status is Ready since the RESUMED.
    (client.ws as unknown as { checkShardsReady(): void }).checkShardsReady();
  });
}
