import type { DatabaseSync } from 'node:sqlite';
import { migrate } from '../storage/sqlite.ts';

/**
 * The budget tables' migrations, applied by `migrate(db, 'budget', …)`. Append only: a released migration is
 * never edited. Times are milliseconds since the epoch; money is whole nano-dollars from version 2 on.
 */
export const BUDGET_MIGRATIONS: readonly string[] = [
  `CREATE TABLE budget_account (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     balance_usd REAL,
     balance_seen_at INTEGER,
     price_per_char_usd REAL,
     price_characters INTEGER,
     blocked_since INTEGER,
     blocked_reason TEXT,
     warned INTEGER NOT NULL DEFAULT 0
   );
   INSERT INTO budget_account (id) VALUES (1);
   CREATE TABLE budget_ledger (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     kind TEXT NOT NULL,
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     characters INTEGER NOT NULL,
     cost_usd REAL,
     estimated_cost_usd REAL,
     balance_after_usd REAL,
     request_id TEXT,
     at INTEGER NOT NULL,
     day TEXT NOT NULL
   );
   CREATE INDEX budget_ledger_guild_day ON budget_ledger (guild_id, day);
   CREATE INDEX budget_ledger_user_at ON budget_ledger (user_id, at);
   CREATE TABLE budget_guild (
     guild_id TEXT PRIMARY KEY,
     daily_cap_usd REAL,
     alert_channel_id TEXT
   );`,
  // Money in whole nano-dollars (the price in pico-dollars per character), never floating point; and the
  // reason paid audio went unheard (`wasted`), null while it was played or may still be.
  `CREATE TABLE budget_account_v2 (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     balance_nanos INTEGER,
     balance_seen_at INTEGER,
     price_picos_per_char INTEGER,
     price_characters INTEGER,
     blocked_since INTEGER,
     blocked_reason TEXT,
     warned INTEGER NOT NULL DEFAULT 0
   );
   INSERT INTO budget_account_v2
     SELECT id, CAST(ROUND(balance_usd * 1e9) AS INTEGER), balance_seen_at,
       CAST(ROUND(price_per_char_usd * 1e12) AS INTEGER), price_characters, blocked_since, blocked_reason, warned
     FROM budget_account;
   DROP TABLE budget_account;
   ALTER TABLE budget_account_v2 RENAME TO budget_account;
   CREATE TABLE budget_ledger_v2 (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     kind TEXT NOT NULL,
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     characters INTEGER NOT NULL,
     cost_nanos INTEGER,
     estimated_cost_nanos INTEGER,
     balance_after_nanos INTEGER,
     request_id TEXT,
     at INTEGER NOT NULL,
     day TEXT NOT NULL,
     wasted TEXT
   );
   INSERT INTO budget_ledger_v2
     SELECT id, kind, guild_id, user_id, characters, CAST(ROUND(cost_usd * 1e9) AS INTEGER),
       CAST(ROUND(estimated_cost_usd * 1e9) AS INTEGER), CAST(ROUND(balance_after_usd * 1e9) AS INTEGER),
       request_id, at, day, NULL
     FROM budget_ledger;
   DROP TABLE budget_ledger;
   ALTER TABLE budget_ledger_v2 RENAME TO budget_ledger;
   CREATE INDEX budget_ledger_guild_day ON budget_ledger (guild_id, day);
   CREATE INDEX budget_ledger_user_at ON budget_ledger (user_id, at);
   CREATE TABLE budget_guild_v2 (
     guild_id TEXT PRIMARY KEY,
     daily_cap_nanos INTEGER,
     alert_channel_id TEXT
   );
   INSERT INTO budget_guild_v2
     SELECT guild_id, CAST(ROUND(daily_cap_usd * 1e9) AS INTEGER), alert_channel_id FROM budget_guild;
   DROP TABLE budget_guild;
   ALTER TABLE budget_guild_v2 RENAME TO budget_guild;`,
];

const NANOS = 1e9;
const PICOS = 1e12;
const toNanos = (usd: number | null): number | null => (usd === null ? null : Math.round(usd * NANOS));
const fromNanos = (nanos: number | null): number | null => (nanos === null ? null : nanos / NANOS);

/**
 * Why spending stopped: Herald's own floor check, the service refusing for lack of credit (402), or a floor that
 * cannot be checked because the service reports no balance.
 */
export type BlockReason = 'floor-reached' | 'service-refused' | 'balance-unknown';

/** Why paid audio was never heard: a member's `/skip` or `/stop`, a deleted message, or how the session ended. */
export type WasteReason = string;

/** The account as last seen, persisted so a restart resumes exactly where it stopped. */
export interface AccountState {
  /** The last trusted `X-Balance-USD`; null before any response. */
  readonly balanceUsd: number | null;
  /** When that balance was seen (ms since the epoch). */
  readonly balanceSeenAt: number | null;
  /** Learned price per character (cost ÷ characters); null before any generation reported a cost. */
  readonly pricePerCharUsd: number | null;
  /** The characters of the generation that price was learned from: more characters, less rounding error. */
  readonly priceCharacters: number | null;
  /** When spending stopped; null while Herald may speak. */
  readonly blockedSince: number | null;
  readonly blockedReason: BlockReason | null;
  /** True once the balance fell to the warning level, until it rises above it again. */
  readonly warned: boolean;
}

/** What one generation (or recheck probe) cost, as written to the ledger. */
export interface LedgerInput {
  /** `speech` for a member's utterance, `probe` for the operator's `/budget recheck`. */
  readonly kind: 'speech' | 'probe';
  readonly guildId: string;
  readonly userId: string;
  readonly characters: number;
  /** `X-Cost-USD`; null when the service did not send it. */
  readonly costUsd: number | null;
  /** What the guard reserved; spend falls back to it when the cost is unknown. */
  readonly estimatedCostUsd: number | null;
  /** `X-Balance-USD` of this response, as reported (even when not trusted as the account's balance). */
  readonly balanceAfterUsd: number | null;
  readonly requestId: string | null;
  /** Ms since the epoch. */
  readonly at: number;
}

/** One ledger row. */
export interface LedgerEntry extends LedgerInput {
  readonly id: number;
  /** Why this paid audio was never heard; null when it was played (or may still be). */
  readonly wasted: WasteReason | null;
  /** The UTC day of `at`, `YYYY-MM-DD`. */
  readonly day: string;
}

/** One member's share of a server's spend on one day. */
export interface MemberSpend {
  readonly userId: string;
  readonly usd: number;
  readonly characters: number;
  readonly generations: number;
}

/** A server's spend on one UTC day, with per-member lines (largest first). */
export interface DailySpend {
  readonly guildId: string;
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly usd: number;
  readonly characters: number;
  readonly generations: number;
  readonly members: readonly MemberSpend[];
}

/** A server's budget settings; servers never configured have no cap and no alert channel. */
export interface GuildBudgetSettings {
  readonly guildId: string;
  /** Most this server may spend per UTC day; null for no cap. */
  readonly dailyCapUsd: number | null;
  /** Where budget warnings go for this server; null for none. */
  readonly alertChannelId: string | null;
}

/**
 * The budget's storage. Synchronous on purpose: node:sqlite is, and a settlement must be durable before the next
 * request is reserved, so the guard never works from a half-written state.
 */
export interface BudgetStore {
  account(): AccountState;
  /** Replaces the account state. */
  saveAccount(state: AccountState): void;
  /** Appends a ledger row and replaces the account state in one transaction; returns the row's id. */
  recordGeneration(entry: LedgerInput, state: AccountState): number;
  /** Marks a ledger row as paid and never heard, with why; the first reason given stays. */
  markWasted(ledgerId: number, reason: WasteReason): void;
  /** Ledger rows, oldest first; `since` (ms) keeps only rows at or after it. */
  ledger(options?: { readonly since?: number; readonly guildId?: string }): LedgerEntry[];
  /** A server's spend on a UTC day (`YYYY-MM-DD`). */
  spendOn(guildId: string, day: string): DailySpend;
  /** The user's generations after `since` (ms), oldest first, across every server. */
  userCharactersSince(userId: string, since: number): { at: number; characters: number }[];
  guildSettings(guildId: string): GuildBudgetSettings;
  setDailyCap(guildId: string, usd: number | null): void;
  setAlertChannel(guildId: string, channelId: string | null): void;
  /** Every alert channel a server configured. */
  alertChannels(): string[];
  close(): void;
}

/** The UTC day of a time in ms, as `YYYY-MM-DD`. */
export function utcDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

interface AccountRow {
  balance_nanos: number | null;
  balance_seen_at: number | null;
  price_picos_per_char: number | null;
  price_characters: number | null;
  blocked_since: number | null;
  blocked_reason: string | null;
  warned: number;
}

interface LedgerRow {
  id: number;
  kind: string;
  guild_id: string;
  user_id: string;
  characters: number;
  cost_nanos: number | null;
  estimated_cost_nanos: number | null;
  balance_after_nanos: number | null;
  request_id: string | null;
  at: number;
  day: string;
  wasted: string | null;
}

/** Spend counts the reported cost, or the reservation's estimate when the service sent none. */
const SPEND = 'COALESCE(cost_nanos, estimated_cost_nanos, 0)';

/** A {@link BudgetStore} on a database from `openSqlite`; applies the budget migrations first. */
export function createSqliteBudgetStore(db: DatabaseSync): BudgetStore {
  migrate(db, 'budget', BUDGET_MIGRATIONS);
  const selectAccount = db.prepare(
    `SELECT balance_nanos, balance_seen_at, price_picos_per_char, price_characters, blocked_since, blocked_reason,
       warned FROM budget_account WHERE id = 1`,
  );
  const updateAccount = db.prepare(
    `UPDATE budget_account SET balance_nanos = ?, balance_seen_at = ?, price_picos_per_char = ?, price_characters = ?,
       blocked_since = ?, blocked_reason = ?, warned = ? WHERE id = 1`,
  );
  const insertLedger = db.prepare(
    `INSERT INTO budget_ledger (kind, guild_id, user_id, characters, cost_nanos, estimated_cost_nanos,
       balance_after_nanos, request_id, at, day) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const updateWasted = db.prepare('UPDATE budget_ledger SET wasted = ? WHERE id = ? AND wasted IS NULL');
  const selectSpendByMember = db.prepare(
    `SELECT user_id, SUM(${SPEND}) AS usd, SUM(characters) AS characters, COUNT(*) AS generations
     FROM budget_ledger WHERE guild_id = ? AND day = ? GROUP BY user_id ORDER BY usd DESC, user_id`,
  );
  const selectUserSince = db.prepare(
    'SELECT at, characters FROM budget_ledger WHERE user_id = ? AND at > ? ORDER BY at, id',
  );
  const selectGuild = db.prepare(
    'SELECT daily_cap_nanos, alert_channel_id FROM budget_guild WHERE guild_id = ?',
  );
  const upsertCap = db.prepare(
    `INSERT INTO budget_guild (guild_id, daily_cap_nanos) VALUES (?, ?)
     ON CONFLICT (guild_id) DO UPDATE SET daily_cap_nanos = excluded.daily_cap_nanos`,
  );
  const upsertAlertChannel = db.prepare(
    `INSERT INTO budget_guild (guild_id, alert_channel_id) VALUES (?, ?)
     ON CONFLICT (guild_id) DO UPDATE SET alert_channel_id = excluded.alert_channel_id`,
  );
  const selectAlertChannels = db.prepare(
    'SELECT DISTINCT alert_channel_id FROM budget_guild WHERE alert_channel_id IS NOT NULL ORDER BY alert_channel_id',
  );

  const writeAccount = (state: AccountState): void => {
    updateAccount.run(
      toNanos(state.balanceUsd),
      state.balanceSeenAt,
      state.pricePerCharUsd === null ? null : Math.round(state.pricePerCharUsd * PICOS),
      state.priceCharacters,
      state.blockedSince,
      state.blockedReason,
      state.warned ? 1 : 0,
    );
  };

  return {
    account() {
      const row = selectAccount.get() as AccountRow | undefined;
      if (!row) throw new Error('The budget_account row is missing; the budget tables are damaged.');
      return {
        balanceUsd: fromNanos(row.balance_nanos),
        balanceSeenAt: row.balance_seen_at,
        pricePerCharUsd: row.price_picos_per_char === null ? null : row.price_picos_per_char / PICOS,
        priceCharacters: row.price_characters,
        blockedSince: row.blocked_since,
        blockedReason: isBlockReason(row.blocked_reason) ? row.blocked_reason : null,
        warned: row.warned !== 0,
      };
    },
    saveAccount: writeAccount,
    recordGeneration(entry, state) {
      db.exec('BEGIN IMMEDIATE');
      try {
        const { lastInsertRowid } = insertLedger.run(
          entry.kind,
          entry.guildId,
          entry.userId,
          entry.characters,
          toNanos(entry.costUsd),
          toNanos(entry.estimatedCostUsd),
          toNanos(entry.balanceAfterUsd),
          entry.requestId,
          entry.at,
          utcDay(entry.at),
        );
        writeAccount(state);
        db.exec('COMMIT');
        return Number(lastInsertRowid);
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
    },
    markWasted(ledgerId, reason) {
      updateWasted.run(reason, ledgerId);
    },
    ledger(options = {}) {
      const rows = db
        .prepare(`SELECT * FROM budget_ledger WHERE at >= ? AND (? IS NULL OR guild_id = ?) ORDER BY at, id`)
        .all(options.since ?? 0, options.guildId ?? null, options.guildId ?? null) as unknown as LedgerRow[];
      return rows.map(toLedgerEntry);
    },
    spendOn(guildId, day) {
      const rows = selectSpendByMember.all(guildId, day) as unknown as {
        user_id: string;
        usd: number;
        characters: number;
        generations: number;
      }[];
      const members = rows.map((row) => ({
        userId: row.user_id,
        usd: row.usd / NANOS,
        characters: row.characters,
        generations: row.generations,
      }));
      return {
        guildId,
        day,
        usd: members.reduce((sum, member) => sum + member.usd, 0),
        characters: members.reduce((sum, member) => sum + member.characters, 0),
        generations: members.reduce((sum, member) => sum + member.generations, 0),
        members,
      };
    },
    userCharactersSince(userId, since) {
      return selectUserSince.all(userId, since) as unknown as { at: number; characters: number }[];
    },
    guildSettings(guildId) {
      const row = selectGuild.get(guildId) as
        | { daily_cap_nanos: number | null; alert_channel_id: string | null }
        | undefined;
      return {
        guildId,
        dailyCapUsd: fromNanos(row?.daily_cap_nanos ?? null),
        alertChannelId: row?.alert_channel_id ?? null,
      };
    },
    setDailyCap(guildId, usd) {
      upsertCap.run(guildId, toNanos(usd));
    },
    setAlertChannel(guildId, channelId) {
      upsertAlertChannel.run(guildId, channelId);
    },
    alertChannels() {
      return (selectAlertChannels.all() as { alert_channel_id: string }[]).map((row) => row.alert_channel_id);
    },
    close() {
      if (db.isOpen) db.close();
    },
  };
}

function isBlockReason(value: string | null): value is BlockReason {
  return value === 'floor-reached' || value === 'service-refused' || value === 'balance-unknown';
}

function toLedgerEntry(row: LedgerRow): LedgerEntry {
  return {
    id: row.id,
    kind: row.kind === 'probe' ? 'probe' : 'speech',
    guildId: row.guild_id,
    userId: row.user_id,
    characters: row.characters,
    costUsd: fromNanos(row.cost_nanos),
    estimatedCostUsd: fromNanos(row.estimated_cost_nanos),
    balanceAfterUsd: fromNanos(row.balance_after_nanos),
    requestId: row.request_id,
    at: row.at,
    day: row.day,
    wasted: row.wasted,
  };
}
