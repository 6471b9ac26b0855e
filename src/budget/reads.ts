/**
 * Reading the budget tables: their rows, how a row maps to a record (money is stored as whole
 * nano-dollars), and the reads every budget decision is made on.
 */
import type { Queryable } from '../storage/database.ts';
import { fromNanos, toNanos } from './money.ts';
import type {
  AccountState,
  BlockReason,
  DailySpend,
  GuildBudgetSettings,
  LedgerEntry,
  StoredReservation,
} from './records.ts';

export const PICOS = 1e12;
/** A nullable column's money: null stays null (no balance reported, no cap set). */
export const toNanosOrNull = (usd: number | null): number | null => (usd === null ? null : toNanos(usd));
const fromNanosOrNull = (nanos: number | null): number | null => (nanos === null ? null : fromNanos(nanos));

/** Unexpired reservations, summed: how many, their estimate, the server's part of it, the member's characters. */
export interface OpenTotals {
  readonly count: number;
  readonly estimateNanos: number;
  /**
   * The part of {@link estimateNanos} reserved before the known balance was seen: generations whose charge that
   * balance may already include, so counting them again may refuse what fits once they settle.
   */
  readonly priorNanos: number;
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
   * for every decision made a burst of N requests cost N² rows. `seenAt`: when the known balance was seen.
   */
  openTotals(at: number, guildId: string, userId: string, seenAt?: number | null): Promise<OpenTotals>;
  /** A server's spend on a UTC day (`YYYY-MM-DD`). */
  spendOn(guildId: string, day: string): Promise<DailySpend>;
  /** The user's generations after `since` (ms), oldest first, across every server. */
  userCharactersSince(userId: string, since: number): Promise<{ at: number; characters: number }[]>;
  guildSettings(guildId: string): Promise<GuildBudgetSettings>;
  /** The ledger's uncertain rows (see {@link LedgerEntry.uncertain}): how many, and the most they could cost. */
  uncertain(): Promise<{ readonly generations: number; readonly upToUsd: number }>;
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

export interface LedgerRow {
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

export interface ReservationRow {
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

export const toReservation = (row: ReservationRow): StoredReservation => ({
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
export function reads(q: Queryable): BudgetReads {
  return {
    async account() {
      const row = await q.get<AccountRow>(
        `SELECT balance_nanos, balance_seen_at, price_picos_per_char, price_characters, blocked_since,
           blocked_reason, warned FROM budget_account WHERE id = 1${q.forUpdate}`,
      );
      if (!row) throw new Error('The budget_account row is missing; the budget tables are damaged.');
      return {
        balanceUsd: fromNanosOrNull(row.balance_nanos),
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
    async openTotals(at, guildId, userId, seenAt) {
      const row = await q.get<{ count: number; total: number; prior: number; guild: number; member: number }>(
        `SELECT COUNT(*) AS count, COALESCE(SUM(estimate_nanos), 0) AS total,
           COALESCE(SUM(CASE WHEN created_at < $4 THEN estimate_nanos ELSE 0 END), 0) AS prior,
           COALESCE(SUM(CASE WHEN guild_id = $2 THEN estimate_nanos ELSE 0 END), 0) AS guild,
           COALESCE(SUM(CASE WHEN user_id = $3 THEN characters ELSE 0 END), 0) AS member
         FROM budget_reservations WHERE expires_at > $1`,
        [at, guildId, userId, seenAt ?? 0],
      );
      return {
        count: Number(row?.count ?? 0),
        estimateNanos: Number(row?.total ?? 0),
        priorNanos: Number(row?.prior ?? 0),
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
        usd: fromNanos(Number(row.usd)),
        characters: Number(row.characters),
        generations: Number(row.generations),
      }));
      return {
        guildId,
        day,
        usd: fromNanos(rows.reduce((sum, row) => sum + Number(row.usd), 0)),
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
        dailyCapUsd: fromNanosOrNull(row?.daily_cap_nanos ?? null),
        alertChannelId: row?.alert_channel_id ?? null,
      };
    },
    async uncertain() {
      const row = await q.get<{ generations: number; nanos: number | null }>(
        `SELECT COUNT(*) AS generations, SUM(estimated_cost_nanos) AS nanos FROM budget_ledger
         WHERE uncertain = 1`,
      );
      return { generations: Number(row?.generations ?? 0), upToUsd: fromNanos(Number(row?.nanos ?? 0)) };
    },
  };
}

function isBlockReason(value: string | null): value is BlockReason {
  return value === 'floor-reached' || value === 'service-refused' || value === 'balance-unknown';
}

export function toLedgerEntry(row: LedgerRow): LedgerEntry {
  return {
    id: row.id,
    kind: row.kind === 'probe' ? 'probe' : 'speech',
    guildId: row.guild_id,
    userId: row.user_id,
    characters: row.characters,
    costUsd: fromNanosOrNull(row.cost_nanos),
    estimatedCostUsd: fromNanosOrNull(row.estimated_cost_nanos),
    balanceAfterUsd: fromNanosOrNull(row.balance_after_nanos),
    requestId: row.request_id,
    at: row.at,
    day: row.day,
    wasted: row.wasted,
    uncertain: Number(row.uncertain) !== 0,
  };
}
