/**
 * Gateway sessions kept in the database, so that a restart RESUMEs rather than IDENTIFYing (one IDENTIFY per 5 s
 * per bucket makes a restart of four shards wait for Discord): Herald's composition root builds
 * {@link createGatewaySessions} before the client, starts it once the database is open, and closes it resumable on
 * a planned stop. See docs/gateway-sessions.md.
 */
import type { Client, WebSocketOptions } from 'discord.js';
import type { Logger } from '../log.ts';
import type { Database } from '../storage/database.ts';
import { snapshotShard } from './cache-snapshot.ts';
import { restoreOnResume } from './resume.ts';
import { createSessionKeeper, type SessionKeeperOptions } from './sessions.ts';
import { createGatewaySessionStore } from './store.ts';

/** A client's gateway sessions, kept in the database. */
export interface GatewaySessions {
  /** For the client's `ws` options. */
  readonly wsOptions: Pick<WebSocketOptions, 'buildStrategy'>;
  /**
   * Opens the sessions' table and listens for resumes; before the client logs in. `beforeReady` runs for a shard
   * resumed after a restart once its cache is back, before the events it held back are handled; it never rejects.
   */
  start(
    client: Client,
    db: Database,
    logger: Logger,
    beforeReady: (shardId: number) => Promise<void>,
  ): Promise<void>;
  /**
   * A planned stop: closes the gateway with a resumable code and stores each shard's session with its cache, so
   * that the next start RESUMEs. Call before `client.destroy()` (whose 1000 would end the sessions).
   */
  closeResumable(): Promise<void>;
}

/** Gateway sessions for one client; see {@link GatewaySessions}. */
export function createGatewaySessions(options: SessionKeeperOptions = {}): GatewaySessions {
  const keeper = createSessionKeeper(options);
  return {
    wsOptions: { buildStrategy: keeper.buildStrategy },
    async start(client, db, logger, beforeReady) {
      const store = await createGatewaySessionStore(db);
      keeper.attach({ store, logger, snapshot: (shardId) => JSON.stringify(snapshotShard(client, shardId)) });
      restoreOnResume(client, keeper, logger, beforeReady);
    },
    closeResumable: () => keeper.closeResumable(),
  };
}
