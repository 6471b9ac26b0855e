/** Herald's ledger (its database's `budget_ledger`) against what the TTS emulator charged, request by request. */
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import type { RecordedRequest } from '../emulators/tts/index.ts';

/** A ledger row as the soak compares it. */
export interface LedgerRow {
  readonly requestId: string | null;
  readonly costUsd: number;
  /** A generation that got no answer (or whose process died before settling): it may have been charged. */
  readonly uncertain: boolean;
  /** What was reserved for it: the most an uncertain row can have cost. */
  readonly estimateUsd: number;
}

/** What the comparison found. */
export interface LedgerCheck {
  /** Generations the service charged (up to the cut-off). */
  readonly charged: number;
  readonly chargedUsd: number;
  readonly rows: number;
  readonly ledgerUsd: number;
  /** Charged generations with no ledger row, beyond those the ledger lists as uncertain. */
  readonly lostRows: number;
  /** Uncertain rows: generations that may have been charged, counted at their estimate. */
  readonly uncertainRows: number;
  /** The most the uncertain rows can have cost together. */
  readonly uncertainUpToUsd: number;
  /** Ledger rows naming a request the service never charged. */
  readonly extraRows: number;
}

const LEDGER_SELECT = 'SELECT request_id, cost_nanos, estimated_cost_nanos, uncertain FROM budget_ledger';

/** A row as either database returns it (SQLite integers may be bigints, PostgreSQL's BIGINT strings). */
interface StoredRow {
  request_id: string | null;
  cost_nanos: number | bigint | string | null;
  estimated_cost_nanos: number | bigint | string | null;
  uncertain: number | bigint;
}

const toRow = (row: StoredRow): LedgerRow => ({
  requestId: row.request_id,
  costUsd: Number(row.cost_nanos ?? 0) / 1e9,
  uncertain: Number(row.uncertain) !== 0,
  estimateUsd: Number(row.estimated_cost_nanos ?? 0) / 1e9,
});

/** Reads every ledger row from Herald's SQLite file, read-only (Herald may be writing). */
export async function readLedger(path: string): Promise<LedgerRow[]> {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare(LEDGER_SELECT).all() as unknown as StoredRow[]).map(toRow);
  } finally {
    db.close();
  }
}

/** Every ledger row from Herald's PostgreSQL database at `url`. @throws while the database is away */
export async function readPostgresLedger(url: string): Promise<LedgerRow[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    return (await client.query<StoredRow>(LEDGER_SELECT)).rows.map(toRow);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Compares the ledger with every charge the service made before `before` (Date.now() ms). */
export function compareLedger(
  rows: readonly LedgerRow[],
  requests: readonly RecordedRequest[],
  before: number,
): LedgerCheck {
  const charged = requests.filter((request) => request.chargedUsd > 0 && request.receivedAt < before);
  const inLedger = new Set(rows.map((row) => row.requestId));
  const chargedIds = new Set(requests.filter((request) => request.chargedUsd > 0).map((r) => r.requestId));
  const micros = (usd: number) => Math.round(usd * 1e6);
  const unrecorded = charged.filter((request) => !inLedger.has(request.requestId)).length;
  const uncertainRows = rows.filter((row) => row.uncertain).length;
  return {
    charged: charged.length,
    chargedUsd: charged.reduce((sum, request) => sum + micros(request.chargedUsd), 0) / 1e6,
    rows: rows.length,
    ledgerUsd: rows.reduce((sum, row) => sum + micros(row.costUsd), 0) / 1e6,
    lostRows: Math.max(0, unrecorded - uncertainRows),
    uncertainRows,
    uncertainUpToUsd:
      rows.filter((row) => row.uncertain).reduce((sum, row) => sum + micros(row.estimateUsd), 0) / 1e6,
    extraRows: rows.filter((row) => row.requestId !== null && !chargedIds.has(row.requestId)).length,
  };
}

/** Generations the service charged before `before` (Date.now() ms) that have no ledger row. */
export function lostRequests(
  rows: readonly LedgerRow[],
  requests: readonly RecordedRequest[],
  before: number,
): RecordedRequest[] {
  const inLedger = new Set(rows.map((row) => row.requestId));
  // An uncertain row stands for one charged generation Herald got no answer for (it cannot name which).
  const covered = rows.filter((row) => row.uncertain).length;
  return requests
    .filter(
      (request) => request.chargedUsd > 0 && request.receivedAt < before && !inLedger.has(request.requestId),
    )
    .slice(covered);
}
