import {
  CloseCodes,
  type IShardingStrategy,
  type SessionInfo,
  SimpleShardingStrategy,
  type WebSocketManager,
} from '@discordjs/ws';
import type { Logger } from '../log.ts';
import { DEFAULT_RESUME_WINDOW_MS } from './resumable.ts';
import { type GatewaySession, type GatewaySessionStore, whyNotResumable } from './store.ts';

/** Sequence updates (one per dispatch) reach the database at most this often per shard. */
export const DEFAULT_FLUSH_EVERY_MS = 1_000;

/** Options of {@link createSessionKeeper}. */
export interface SessionKeeperOptions {
  readonly resumeWindowMs?: number;
  readonly flushEveryMs?: number;
  readonly now?: () => number;
}

/** What the keeper needs once the database is open. */
export interface SessionKeeperAttachment {
  readonly store: GatewaySessionStore;
  readonly logger: Logger;
  /** The cache snapshot a planned stop writes with each shard's session (JSON). */
  readonly snapshot: (shardId: number) => string;
}

/** Keeps each shard's gateway session in the database, for the shards of one discord.js client. */
export interface SessionKeeper {
  /** `buildStrategy` for the client's `ws` options. */
  readonly buildStrategy: (manager: WebSocketManager) => IShardingStrategy;
  /** Gives the keeper its store; sessions are read and written only after this. */
  attach(attachment: SessionKeeperAttachment): void;
  /** The cache snapshot stored with the session this process resumes for `shardId`, taken once. */
  takeCache(shardId: number): string | undefined;
  /**
   * A planned stop: closes every shard with 4200 (a resumable code, where 1000/1001 end the session on Discord)
   * and writes each session with its cache snapshot at once. The client must be destroyed after this.
   */
  closeResumable(): Promise<void>;
}

/**
 * The seam: discord.js 14 passes only `buildStrategy` (and `buildIdentifyThrottler`) through to @discordjs/ws and
 * keeps sessions in a Map of its own. The strategy built here is @discordjs/ws's own, over a view of the manager
 * whose `retrieveSessionInfo`/`updateSessionInfo` also read and write the database; discord.js's Map is kept in
 * step, since its RESUMED handler reads it.
 */
export function createSessionKeeper(options: SessionKeeperOptions = {}): SessionKeeper {
  const resumeWindowMs = options.resumeWindowMs ?? DEFAULT_RESUME_WINDOW_MS;
  const flushEveryMs = options.flushEveryMs ?? DEFAULT_FLUSH_EVERY_MS;
  const now = options.now ?? Date.now;
  let attached: SessionKeeperAttachment | undefined;
  let strategy: IShardingStrategy | undefined;
  let shardCount = 0;
  let stopping = false;
  // Per shard: the session as the library last gave it, the one last written, the stored one offered at start.
  const current = new Map<number, SessionInfo>();
  const written = new Map<number, string>();
  const offered = new Map<number, Promise<SessionInfo | null>>();
  const used = new Set<number>();
  const caches = new Map<number, string>();
  const timers = new Map<number, NodeJS.Timeout>();
  // Writes are applied in order, one at a time; a failure is logged, never thrown at the gateway.
  let writes: Promise<void> = Promise.resolve();
  const write = (what: string, work: (store: GatewaySessionStore) => Promise<void>): Promise<void> => {
    writes = writes.then(async () => {
      if (!attached) return;
      try {
        await work(attached.store);
      } catch (error) {
        attached.logger.warn(`could not ${what}`, { err: error });
      }
    });
    return writes;
  };
  const toRow = (shardId: number, info: SessionInfo): GatewaySession => ({
    shardId,
    shardCount: info.shardCount,
    sessionId: info.sessionId,
    sequence: info.sequence,
    resumeUrl: info.resumeURL,
  });

  async function storedSession(shardId: number): Promise<SessionInfo | null> {
    if (!attached) return null;
    const { store, logger } = attached;
    const stored = await store.load(shardId).catch((error: unknown) => {
      logger.warn('could not read the stored gateway session; identifying', { shardId, err: error });
      return undefined;
    });
    if (!stored) return null;
    const reason = whyNotResumable(stored, shardCount, now() - stored.updatedAt, resumeWindowMs);
    if (reason !== undefined) {
      logger.info(`not resuming the stored gateway session: ${reason}; identifying`, { shardId });
      return null;
    }
    caches.set(shardId, stored.cache as string);
    // Taken: a crash after this restart must not put the same snapshot back again.
    void write('drop a used cache snapshot', (s) => s.dropCache(shardId));
    logger.info('resuming the gateway session kept in the database', { shardId, sequence: stored.sequence });
    return {
      sessionId: stored.sessionId,
      sequence: stored.sequence,
      resumeURL: stored.resumeUrl,
      shardId,
      shardCount: stored.shardCount,
    };
  }

  function flush(shardId: number): void {
    clearTimeout(timers.get(shardId));
    timers.delete(shardId);
    const info = current.get(shardId);
    if (info) void write('save a gateway session', (s) => s.save(toRow(shardId, info), now()));
  }

  return {
    buildStrategy(manager) {
      const own = manager.options;
      const view = {
        options: {
          ...own,
          async retrieveSessionInfo(shardId: number): Promise<SessionInfo | null> {
            const mine = await own.retrieveSessionInfo(shardId);
            if (mine || used.has(shardId)) return mine;
            if (!offered.has(shardId)) {
              shardCount = await manager.getShardCount();
              offered.set(shardId, storedSession(shardId));
            }
            const stored = await offered.get(shardId);
            if (!stored || used.has(shardId)) return null;
            used.add(shardId);
            current.set(shardId, stored);
            await own.updateSessionInfo(shardId, stored);
            return stored;
          },
          async updateSessionInfo(shardId: number, info: SessionInfo | null): Promise<void> {
            used.add(shardId);
            // A planned stop closes with a resumable code: the session it keeps is not erased here nor in discord.js.
            if (stopping) return;
            await own.updateSessionInfo(shardId, info);
            if (info === null) {
              // Discord ended the session (op 9, a close that cannot resume): its snapshot describes nothing now.
              caches.delete(shardId);
              current.delete(shardId);
              written.delete(shardId);
              clearTimeout(timers.get(shardId));
              timers.delete(shardId);
              void write('forget a gateway session', (s) => s.remove(shardId));
              return;
            }
            current.set(shardId, info);
            // A new session (READY) is written at once; sequences at most every flushEveryMs.
            if (written.get(shardId) !== info.sessionId) {
              written.set(shardId, info.sessionId);
              flush(shardId);
            } else if (!timers.has(shardId)) {
              timers.set(
                shardId,
                setTimeout(() => flush(shardId), flushEveryMs),
              );
            }
          },
        },
        fetchGatewayInformation: (force?: boolean) => manager.fetchGatewayInformation(force),
        getShardCount: () => manager.getShardCount(),
        getShardIds: () => manager.getShardIds(),
        emit: (...args: Parameters<WebSocketManager['emit']>) => manager.emit(...args),
      };
      strategy = new SimpleShardingStrategy(view as unknown as WebSocketManager);
      return strategy;
    },
    attach(attachment) {
      attached = attachment;
    },
    takeCache(shardId) {
      const cache = caches.get(shardId);
      caches.delete(shardId);
      return cache;
    },
    async closeResumable() {
      stopping = true;
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      await strategy?.destroy({ code: CloseCodes.Resuming, reason: 'Herald restarts and will resume' });
      const at = now();
      for (const [shardId, info] of current) {
        await write('save a gateway session for the restart', async (s) => {
          const snapshot = attached?.snapshot(shardId);
          if (snapshot === undefined) return;
          await s.saveAtStop(toRow(shardId, info), snapshot, at);
        });
      }
      await writes;
    },
  };
}
