/**
 * The budget's storage: the transaction every budget decision runs in, and the writes. Its records are in
 * `records.ts`, its reads and row mapping in `reads.ts`, its schema in `migrations.ts`.
 */
import type { Database, Queryable } from '../storage/database.ts';
import { BUDGET_MIGRATIONS } from './migrations.ts';
import {
  type BudgetReads,
  type LedgerRow,
  PICOS,
  type ReservationRow,
  reads,
  toLedgerEntry,
  toNanosOrNull,
  toReservation,
} from './reads.ts';
import {
  type AccountState,
  type LedgerEntry,
  type LedgerInput,
  type StoredReservation,
  utcDay,
  type WasteReason,
} from './records.ts';

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

const writeAccount = async (q: Queryable, state: AccountState): Promise<void> => {
  await q.run(
    `UPDATE budget_account SET balance_nanos = $1, balance_seen_at = $2, price_picos_per_char = $3,
       price_characters = $4, blocked_since = $5, blocked_reason = $6, warned = $7 WHERE id = 1`,
    [
      toNanosOrNull(state.balanceUsd),
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
        // Rows already marked stay as they are: rewriting every reservation in flight for each new one made a burst
        // of N reservations write N²/2 rows.
        const marked = await tx.run(
          'UPDATE budget_reservations SET overlapped = 1 WHERE expires_at > $1 AND overlapped = 0',
          [input.createdAt],
        );
        const others =
          marked > 0 ||
          (await tx.get('SELECT 1 AS one FROM budget_reservations WHERE expires_at > $1 LIMIT 1', [
            input.createdAt,
          ])) !== undefined;
        const row = await tx.get<ReservationRow>(
          `INSERT INTO budget_reservations (kind, guild_id, user_id, characters, estimate_nanos, overlapped,
           created_at, expires_at, owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
          [
            input.kind,
            input.guildId,
            input.userId,
            input.characters,
            input.estimateNanos,
            others ? 1 : 0,
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
            toNanosOrNull(entry.costUsd),
            toNanosOrNull(entry.estimatedCostUsd),
            toNanosOrNull(entry.balanceAfterUsd),
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
        // The lock every budget decision queues on: the account's row on PostgreSQL. On SQLite, BEGIN IMMEDIATE
        // already holds the whole database, and the statement would be one more per reservation and settlement.
        if (tx.forUpdate !== '') await tx.get(`SELECT id FROM budget_account WHERE id = 1${tx.forUpdate}`);
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
        [guildId, toNanosOrNull(usd)],
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
