import type { Database, Migrations, Queryable } from '../storage/database.ts';

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
  /**
   * True for a generation whose process stopped between the paid call and its settlement: the service may or
   * may not have charged it; it counts at its estimate (the most it could cost) until its settlement arrives.
   */
  readonly uncertain: boolean;
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

/** Money set aside in the database for one generation in flight, until it is settled, released or expires. */
export interface StoredReservation {
  readonly id: number;
  readonly kind: 'speech' | 'probe';
  readonly guildId: string;
  readonly userId: string;
  readonly characters: number;
  readonly estimateNanos: number;
  /** True once another generation was in flight alongside this one: its reported balance may be stale. */
  readonly overlapped: boolean;
  /** The process that made it (see {@link BudgetTransaction.reconcile}); null for rows older than owners. */
  readonly owner: string | null;
  readonly createdAt: number;
  /** After this (ms), the reservation no longer holds money: its process is taken to have died. */
  readonly expiresAt: number;
}

/** Unexpired reservations, summed: how many, their estimate, the server's part of it, the member's characters. */
export interface OpenTotals {
  readonly count: number;
  readonly estimateNanos: number;
  readonly guildEstimateNanos: number;
  readonly userCharacters: number;
}

/** What the guard reads; inside {@link BudgetStore.locked} the figures cannot change under it. */
export interface BudgetReads {
  account(): Promise<AccountState>;
  /** Reservations that had not expired at `at` (ms), every process's, oldest first. */
  reservations(at: number): Promise<StoredReservation[]>;
  /**
   * The same reservations summed in the database, for a decision about `guildId` and `userId`: reading every row
   * for every decision made a burst of N requests cost N² rows.
   */
  openTotals(at: number, guildId: string, userId: string): Promise<OpenTotals>;
  /** A server's spend on a UTC day (`YYYY-MM-DD`). */
  spendOn(guildId: string, day: string): Promise<DailySpend>;
  /** The user's generations after `since` (ms), oldest first, across every server. */
  userCharactersSince(userId: string, since: number): Promise<{ at: number; characters: number }[]>;
  guildSettings(guildId: string): Promise<GuildBudgetSettings>;
  /** The ledger's uncertain rows (see {@link LedgerEntry.uncertain}): how many, and the most they could cost. */
  uncertain(): Promise<{ readonly generations: number; readonly upToUsd: number }>;
}

/** The writes a budget decision makes, atomically with the reads it was made on. */
export interface BudgetTransaction extends BudgetReads {
  /** Replaces the account state. */
  saveAccount(state: AccountState): Promise<void>;
  /** Adds a reservation; every reservation in flight (this one included, if any other is) is marked overlapped. */
  addReservation(
    reservation: Omit<StoredReservation, 'id' | 'overlapped' | 'owner'> & { readonly owner?: string | null },
  ): Promise<StoredReservation>;
  /** Removes and returns a reservation; undefined when it was already settled, released or expired. */
  takeReservation(id: number): Promise<StoredReservation | undefined>;
  /**
   * Turns the reservations of processes that stopped without settling them into uncertain ledger rows at their
   * estimate, and returns them: those that expired at or before `expiredAt`, and every one `owner` made (called
   * by a process as it starts, for what its previous run left).
   */
  reconcile(expiredAt: number, owner?: string): Promise<StoredReservation[]>;
  /** Writes the ledger's uncertain row for a reservation taken out (a call that may have been charged). */
  recordUncertain(reservation: StoredReservation): Promise<void>;
  /**
   * Appends a ledger row; returns its id, or undefined when the row of `reservationId` is already there (a
   * settlement is never recorded, so never charged, twice). A settlement arriving for an uncertain row replaces
   * its estimate with the real figures and returns that row's id.
   */
  recordGeneration(entry: LedgerInput, reservationId: number): Promise<number | undefined>;
}

/**
 * The budget's storage, shared by every process on the database. Decisions that must see each other (reserve,
 * settle, release, resume) run in {@link locked}: one at a time across all processes.
 */
export interface BudgetStore extends BudgetReads {
  /**
   * Runs `work` in one transaction holding the budget's lock: PostgreSQL `SELECT … FOR UPDATE` on the account row,
   * SQLite `BEGIN IMMEDIATE`. Another process's `locked` waits until this one commits.
   */
  locked<T>(work: (tx: BudgetTransaction) => Promise<T>): Promise<T>;
  /** Replaces the account state (outside a decision: tests and the start-up transitions). */
  saveAccount(state: AccountState): Promise<void>;
  /** Marks a ledger row as paid and never heard, with why; the first reason given stays. */
  markWasted(ledgerId: number, reason: WasteReason): Promise<void>;
  /** Ledger rows, oldest first; `since` (ms) keeps only rows at or after it. */
  ledger(options?: { readonly since?: number; readonly guildId?: string }): Promise<LedgerEntry[]>;
  setDailyCap(guildId: string, usd: number | null): Promise<void>;
  setAlertChannel(guildId: string, channelId: string | null): Promise<void>;
  /** Every alert channel a server configured. */
  alertChannels(): Promise<string[]>;
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
  uncertain: number;
}

/** Spend counts the reported cost, or the reservation's estimate when the service sent none. */
const SPEND = 'COALESCE(cost_nanos, estimated_cost_nanos, 0)';

interface ReservationRow {
  id: number;
  kind: string;
  guild_id: string;
  user_id: string;
  characters: number;
  estimate_nanos: number;
  overlapped: number;
  owner: string | null;
  created_at: number;
  expires_at: number;
}

const toReservation = (row: ReservationRow): StoredReservation => ({
  id: row.id,
  kind: row.kind === 'probe' ? 'probe' : 'speech',
  guildId: row.guild_id,
  userId: row.user_id,
  characters: row.characters,
  estimateNanos: row.estimate_nanos,
  overlapped: row.overlapped !== 0,
  owner: row.owner,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

/** The reads, on a connection or inside a transaction. */
function reads(q: Queryable): BudgetReads {
  return {
    async account() {
      const row = await q.get<AccountRow>(
        `SELECT balance_nanos, balance_seen_at, price_picos_per_char, price_characters, blocked_since,
           blocked_reason, warned FROM budget_account WHERE id = 1${q.forUpdate}`,
      );
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
    async reservations(at) {
      const rows = await q.all<ReservationRow>(
        'SELECT * FROM budget_reservations WHERE expires_at > $1 ORDER BY id',
        [at],
      );
      return rows.map(toReservation);
    },
    async openTotals(at, guildId, userId) {
      const row = await q.get<{ count: number; total: number; guild: number; member: number }>(
        `SELECT COUNT(*) AS count, COALESCE(SUM(estimate_nanos), 0) AS total,
           COALESCE(SUM(CASE WHEN guild_id = $2 THEN estimate_nanos ELSE 0 END), 0) AS guild,
           COALESCE(SUM(CASE WHEN user_id = $3 THEN characters ELSE 0 END), 0) AS member
         FROM budget_reservations WHERE expires_at > $1`,
        [at, guildId, userId],
      );
      return {
        count: Number(row?.count ?? 0),
        estimateNanos: Number(row?.total ?? 0),
        guildEstimateNanos: Number(row?.guild ?? 0),
        userCharacters: Number(row?.member ?? 0),
      };
    },
    async spendOn(guildId, day) {
      const rows = await q.all<{ user_id: string; usd: number; characters: number; generations: number }>(
        `SELECT user_id, SUM(${SPEND}) AS usd, SUM(characters) AS characters, COUNT(*) AS generations
         FROM budget_ledger WHERE guild_id = $1 AND day = $2 GROUP BY user_id ORDER BY usd DESC, user_id`,
        [guildId, day],
      );
      const members = rows.map((row) => ({
        userId: row.user_id,
        usd: Number(row.usd) / NANOS,
        characters: Number(row.characters),
        generations: Number(row.generations),
      }));
      return {
        guildId,
        day,
        usd: rows.reduce((sum, row) => sum + Number(row.usd), 0) / NANOS,
        characters: members.reduce((sum, member) => sum + member.characters, 0),
        generations: members.reduce((sum, member) => sum + member.generations, 0),
        members,
      };
    },
    async userCharactersSince(userId, since) {
      const rows = await q.all<{ at: number; characters: number }>(
        'SELECT at, characters FROM budget_ledger WHERE user_id = $1 AND at > $2 ORDER BY at, id',
        [userId, since],
      );
      return rows.map((row) => ({ at: Number(row.at), characters: Number(row.characters) }));
    },
    async guildSettings(guildId) {
      const row = await q.get<{ daily_cap_nanos: number | null; alert_channel_id: string | null }>(
        'SELECT daily_cap_nanos, alert_channel_id FROM budget_guild WHERE guild_id = $1',
        [guildId],
      );
      return {
        guildId,
        dailyCapUsd: fromNanos(row?.daily_cap_nanos ?? null),
        alertChannelId: row?.alert_channel_id ?? null,
      };
    },
    async uncertain() {
      const row = await q.get<{ generations: number; nanos: number | null }>(
        `SELECT COUNT(*) AS generations, SUM(estimated_cost_nanos) AS nanos FROM budget_ledger
         WHERE uncertain = 1`,
      );
      return { generations: Number(row?.generations ?? 0), upToUsd: Number(row?.nanos ?? 0) / NANOS };
    },
  };
}

const writeAccount = async (q: Queryable, state: AccountState): Promise<void> => {
  await q.run(
    `UPDATE budget_account SET balance_nanos = $1, balance_seen_at = $2, price_picos_per_char = $3,
       price_characters = $4, blocked_since = $5, blocked_reason = $6, warned = $7 WHERE id = 1`,
    [
      toNanos(state.balanceUsd),
      state.balanceSeenAt,
      state.pricePerCharUsd === null ? null : Math.round(state.pricePerCharUsd * PICOS),
      state.priceCharacters,
      state.blockedSince,
      state.blockedReason,
      state.warned ? 1 : 0,
    ],
  );
};

/** A {@link BudgetStore} on an open database (SQLite or PostgreSQL); applies the budget migrations first. */
export async function createBudgetStore(db: Database): Promise<BudgetStore> {
  await db.migrate('budget', BUDGET_MIGRATIONS);

  const transaction = (tx: Queryable): BudgetTransaction => {
    const recordUncertain = async (reservation: StoredReservation): Promise<void> => {
      await tx.run(
        `INSERT INTO budget_ledger (kind, guild_id, user_id, characters, estimated_cost_nanos, at, day,
           reservation_id, uncertain) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1)
         ON CONFLICT (reservation_id) DO NOTHING`,
        [
          reservation.kind,
          reservation.guildId,
          reservation.userId,
          reservation.characters,
          reservation.estimateNanos,
          reservation.createdAt,
          utcDay(Number(reservation.createdAt)),
          reservation.id,
        ],
      );
    };
    return {
      ...reads(tx),
      saveAccount: (state) => writeAccount(tx, state),
      async addReservation(input) {
        const others = await tx.run('UPDATE budget_reservations SET overlapped = 1 WHERE expires_at > $1', [
          input.createdAt,
        ]);
        const row = await tx.get<ReservationRow>(
          `INSERT INTO budget_reservations (kind, guild_id, user_id, characters, estimate_nanos, overlapped,
           created_at, expires_at, owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
          [
            input.kind,
            input.guildId,
            input.userId,
            input.characters,
            input.estimateNanos,
            others > 0 ? 1 : 0,
            input.createdAt,
            input.expiresAt,
            input.owner ?? null,
          ],
        );
        if (!row) throw new Error('The budget reservation was not written.');
        return toReservation(row);
      },
      async takeReservation(id) {
        const row = await tx.get<ReservationRow>(
          'DELETE FROM budget_reservations WHERE id = $1 RETURNING *',
          [id],
        );
        return row ? toReservation(row) : undefined;
      },
      async reconcile(expiredAt, owner) {
        const rows = await tx.all<ReservationRow>(
          'DELETE FROM budget_reservations WHERE expires_at <= $1 OR owner = $2 RETURNING *',
          [expiredAt, owner ?? null],
        );
        const left = rows.map(toReservation).sort((a, b) => a.id - b.id);
        for (const reservation of left) await recordUncertain(reservation);
        return left;
      },
      recordUncertain: (reservation) => recordUncertain(reservation),
      async recordGeneration(entry, reservationId) {
        const row = await tx.get<{ id: number }>(
          `INSERT INTO budget_ledger (kind, guild_id, user_id, characters, cost_nanos, estimated_cost_nanos,
           balance_after_nanos, request_id, at, day, reservation_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (reservation_id) DO UPDATE SET cost_nanos = excluded.cost_nanos,
           balance_after_nanos = excluded.balance_after_nanos, request_id = excluded.request_id, uncertain = 0
         WHERE budget_ledger.uncertain = 1
         RETURNING id`,
          [
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
            reservationId,
          ],
        );
        return row?.id;
      },
    };
  };

  return {
    ...reads(db),
    locked: (work) =>
      db.transaction(async (tx) => {
        // The lock every budget decision queues on (SQLite's BEGIN IMMEDIATE already holds the whole database).
        await tx.get(`SELECT id FROM budget_account WHERE id = 1${tx.forUpdate}`);
        return work(transaction(tx));
      }),
    saveAccount: (state) => writeAccount(db, state),
    async markWasted(ledgerId, reason) {
      await db.run('UPDATE budget_ledger SET wasted = $1 WHERE id = $2 AND wasted IS NULL', [
        reason,
        ledgerId,
      ]);
    },
    async ledger(options = {}) {
      const rows = await db.all<LedgerRow>(
        `SELECT id, kind, guild_id, user_id, characters, cost_nanos, estimated_cost_nanos, balance_after_nanos,
           request_id, at, day, wasted, uncertain FROM budget_ledger
         WHERE at >= $1 AND ($2::text IS NULL OR guild_id = $2) ORDER BY at, id`.replace(
          '$2::text',
          db.dialect === 'postgres' ? '$2::text' : '$2',
        ),
        [options.since ?? 0, options.guildId ?? null],
      );
      return rows.map(toLedgerEntry);
    },
    async setDailyCap(guildId, usd) {
      await db.run(
        `INSERT INTO budget_guild (guild_id, daily_cap_nanos) VALUES ($1, $2)
         ON CONFLICT (guild_id) DO UPDATE SET daily_cap_nanos = excluded.daily_cap_nanos`,
        [guildId, toNanos(usd)],
      );
    },
    async setAlertChannel(guildId, channelId) {
      await db.run(
        `INSERT INTO budget_guild (guild_id, alert_channel_id) VALUES ($1, $2)
         ON CONFLICT (guild_id) DO UPDATE SET alert_channel_id = excluded.alert_channel_id`,
        [guildId, channelId],
      );
    },
    async alertChannels() {
      const rows = await db.all<{ alert_channel_id: string }>(
        `SELECT DISTINCT alert_channel_id FROM budget_guild WHERE alert_channel_id IS NOT NULL
         ORDER BY alert_channel_id`,
      );
      return rows.map((row) => row.alert_channel_id);
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
    uncertain: Number(row.uncertain) !== 0,
  };
}
