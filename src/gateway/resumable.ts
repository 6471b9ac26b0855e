import type { Database } from '../storage/database.ts';
import { createGatewaySessionStore, whyNotResumable } from './store.ts';

// In a file of its own, with no discord.js: the sharding manager reads it before it spawns its shards.

/**
 * A stored session older than this is not resumed (Discord keeps a session that was not closed with 1000/1001
 * resumable for a while, about two minutes to be safe): IDENTIFY instead of a RESUME bound to fail.
 */
export const DEFAULT_RESUME_WINDOW_MS = 120_000;

/**
 * The shards among `ids` whose next start will RESUME (a fresh session of `shardCount` shards that a planned stop
 * left): the sharding manager starts these at once, with no IDENTIFY pause between them. Read-only.
 */
export async function resumableShards(
  db: Database,
  ids: readonly number[],
  shardCount: number,
  options: { readonly resumeWindowMs?: number; readonly now?: () => number } = {},
): Promise<number[]> {
  const store = await createGatewaySessionStore(db);
  const now = (options.now ?? Date.now)();
  const window = options.resumeWindowMs ?? DEFAULT_RESUME_WINDOW_MS;
  const resumable: number[] = [];
  for (const id of ids) {
    const stored = await store.load(id);
    if (stored && whyNotResumable(stored, shardCount, now - stored.updatedAt, window) === undefined) {
      resumable.push(id);
    }
  }
  return resumable;
}
