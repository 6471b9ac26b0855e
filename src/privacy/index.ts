import type { Logger } from '../log.ts';
import type { Database, Migrations } from '../storage/database.ts';
import { MEMBER_TABLES, SERVER_TABLES } from './tables.ts';

export { DEFAULT_RETENTION_DAYS, type PrivacyConfig, parsePrivacyConfig } from './config.ts';
export { KEPT_TABLES, MEMBER_TABLES, SERVER_TABLES } from './tables.ts';

/**
 * What Herald keeps, and its deletion: a server's data some days after Herald was removed from it (kept when it is
 * invited back in time), and a member's own data in every server when they ask (`/forget-me`). Money records stay
 * (src/privacy/tables.ts says which and why). No call reaches the TTS service or the audio cache, whose files are
 * named by HMACs of the text and hold no text.
 */
export interface Privacy {
  /** Herald was removed from the server (GUILD_DELETE, not an outage): its deletion is due after the grace period. */
  serverRemoved(guildId: string): Promise<void>;
  /** Herald is in the server (invited back, or seen at start): nothing of it is due for deletion. */
  serverPresent(guildId: string): Promise<void>;
  /** Deletes the data of every server removed longer ago than the grace period; resolves with the servers deleted. */
  sweep(): Promise<string[]>;
  /** Deletes a member's own data in every server; resolves with the number of rows deleted. */
  forgetMember(userId: string): Promise<number>;
  /** Stops the periodic sweep. */
  close(): void;
}

/** Options of {@link createPrivacy}. */
export interface PrivacyOptions {
  readonly retentionDays: number;
  /** Test clock; `Date.now` by default. */
  readonly now?: (() => number) | undefined;
  /** How often the sweep runs (default hourly); it also runs at once. */
  readonly sweepIntervalMs?: number | undefined;
  /** Told of each sweep's deletions and failures. */
  readonly logger: Logger;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;

const REMOVALS_TABLE = `CREATE TABLE guild_removals (
     guild_id TEXT PRIMARY KEY,
     removed_at BIGINT NOT NULL
   );`;
/** Append only: a released migration is never edited. The same table on both engines. */
const PRIVACY_MIGRATIONS: Migrations = { sqlite: [REMOVALS_TABLE], postgres: [REMOVALS_TABLE] };

/**
 * Privacy over Herald's database, once every store has created its tables. The removal time is stored, so a
 * restart keeps counting; any process may sweep (the deletions are idempotent), so shards need no coordination.
 */
export async function createPrivacy(db: Database, options: PrivacyOptions): Promise<Privacy> {
  await db.migrate('privacy', PRIVACY_MIGRATIONS);
  const now = options.now ?? Date.now;
  const graceMs = options.retentionDays * DAY_MS;

  const sweep = async (): Promise<string[]> => {
    const due = await db.all<{ guild_id: string }>(
      'SELECT guild_id FROM guild_removals WHERE removed_at <= $1 ORDER BY removed_at',
      [now() - graceMs],
    );
    const deleted: string[] = [];
    for (const { guild_id: guildId } of due) {
      await db.transaction(async (tx) => {
        // Invited back since the SELECT: the row is gone, and so is the deletion.
        const still = await tx.run('DELETE FROM guild_removals WHERE guild_id = $1 AND removed_at <= $2', [
          guildId,
          now() - graceMs,
        ]);
        if (still === 0) return;
        for (const table of SERVER_TABLES)
          await tx.run(`DELETE FROM ${table} WHERE guild_id = $1`, [guildId]);
        deleted.push(guildId);
      });
    }
    return deleted;
  };

  const runSweep = (): void => {
    sweep().then(
      (deleted) => {
        if (deleted.length > 0) options.logger.info('deleted removed servers’ data', { guilds: deleted });
      },
      (error: unknown) => options.logger.warn('deleting removed servers’ data failed', { err: error }),
    );
  };
  const timer = setInterval(runSweep, options.sweepIntervalMs ?? HOUR_MS);
  timer.unref();
  runSweep();

  return {
    async serverRemoved(guildId) {
      // The first removal counts: a second GUILD_DELETE (a replay) does not push the deletion back.
      await db.run(
        'INSERT INTO guild_removals (guild_id, removed_at) VALUES ($1, $2) ON CONFLICT (guild_id) DO NOTHING',
        [guildId, now()],
      );
    },
    async serverPresent(guildId) {
      await db.run('DELETE FROM guild_removals WHERE guild_id = $1', [guildId]);
    },
    sweep,
    async forgetMember(userId) {
      return db.transaction(async (tx) => {
        let rows = 0;
        for (const table of MEMBER_TABLES)
          rows += await tx.run(`DELETE FROM ${table} WHERE user_id = $1`, [userId]);
        return rows;
      });
    },
    close: () => clearInterval(timer),
  };
}
