/** The budget tables' schema, as append-only migrations for SQLite and PostgreSQL. */
import type { Migrations } from '../storage/database.ts';

/**
 * A reservation names the process that made it (so that process, restarted, reconciles what it left), and a
 * ledger row can be uncertain: a generation cut off by a crash between the paid call and its settlement, counted
 * at its most until (if ever) its settlement arrives. The same statements on both engines.
 */
const RECONCILIATION_MIGRATION = `ALTER TABLE budget_reservations ADD COLUMN owner TEXT;
   ALTER TABLE budget_ledger ADD COLUMN uncertain INTEGER NOT NULL DEFAULT 0;`;

/**
 * The budget tables' SQLite migrations. Append only: a released migration is never edited. Times are milliseconds
 * since the epoch; money is whole nano-dollars from version 2 on.
 */
const SQLITE_MIGRATIONS: readonly string[] = [
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
  // Reservations are rows, shared by every process on the database, and a ledger row names the reservation it
  // settled, so a settlement is recorded once however often it is retried.
  `CREATE TABLE budget_reservations (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     kind TEXT NOT NULL,
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     characters INTEGER NOT NULL,
     estimate_nanos INTEGER NOT NULL,
     overlapped INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL
   );
   ALTER TABLE budget_ledger ADD COLUMN reservation_id INTEGER;
   CREATE UNIQUE INDEX budget_ledger_reservation ON budget_ledger (reservation_id);`,
  RECONCILIATION_MIGRATION,
];

/** The same schema on PostgreSQL, as SQLite has it after all of its migrations. Append only. */
const POSTGRES_MIGRATIONS: readonly string[] = [
  `CREATE TABLE budget_account (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     balance_nanos BIGINT,
     balance_seen_at BIGINT,
     price_picos_per_char BIGINT,
     price_characters INTEGER,
     blocked_since BIGINT,
     blocked_reason TEXT,
     warned INTEGER NOT NULL DEFAULT 0
   );
   INSERT INTO budget_account (id) VALUES (1);
   CREATE TABLE budget_ledger (
     id BIGSERIAL PRIMARY KEY,
     kind TEXT NOT NULL,
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     characters INTEGER NOT NULL,
     cost_nanos BIGINT,
     estimated_cost_nanos BIGINT,
     balance_after_nanos BIGINT,
     request_id TEXT,
     at BIGINT NOT NULL,
     day TEXT NOT NULL,
     wasted TEXT,
     reservation_id BIGINT UNIQUE
   );
   CREATE INDEX budget_ledger_guild_day ON budget_ledger (guild_id, day);
   CREATE INDEX budget_ledger_user_at ON budget_ledger (user_id, at);
   CREATE TABLE budget_guild (
     guild_id TEXT PRIMARY KEY,
     daily_cap_nanos BIGINT,
     alert_channel_id TEXT
   );
   CREATE TABLE budget_reservations (
     id BIGSERIAL PRIMARY KEY,
     kind TEXT NOT NULL,
     guild_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     characters INTEGER NOT NULL,
     estimate_nanos BIGINT NOT NULL,
     overlapped INTEGER NOT NULL DEFAULT 0,
     created_at BIGINT NOT NULL,
     expires_at BIGINT NOT NULL
   );`,
  RECONCILIATION_MIGRATION,
];

/** The budget tables' migrations on each engine, applied by `createBudgetStore`. */
export const BUDGET_MIGRATIONS: Migrations = { sqlite: SQLITE_MIGRATIONS, postgres: POSTGRES_MIGRATIONS };
