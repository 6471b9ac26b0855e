import { existsSync } from 'node:fs';
import type { BlockReason, BudgetStatus } from '../budget/index.ts';
import type { Database, DatabaseConfig } from '../storage/index.ts';
import { DEFAULT_DATABASE_TIMEOUT_MS, DeadlineError, within } from './deadline.ts';

/** One readiness check's verdict; `detail` says why in words an operator can act on (never a secret). */
export interface CheckResult {
  readonly ok: boolean;
  readonly detail?: string;
}

/** `/readyz`'s body: ready when every check is. */
export interface Readiness {
  readonly ready: boolean;
  readonly checks: {
    readonly gateway: CheckResult;
    readonly database: CheckResult;
    readonly tts: CheckResult;
    readonly budget: CheckResult & { readonly reason?: string; readonly resume?: string };
  };
}

/** What readiness asks, each supplied by the composition root. */
export interface ReadinessProbes {
  /** True while the Discord gateway connection is ready. */
  gatewayConnected(): boolean;
  /** Throws (or rejects) when the database does not answer. */
  database(): void | Promise<void>;
  /** A free call to the TTS service (listing voices); rejects when it fails or `signal` aborts. */
  tts(signal: AbortSignal): Promise<unknown>;
  budget(): BudgetStatus | Promise<BudgetStatus>;
}

/** How long the TTS service may take to list its voices before it counts as unreachable. */
export const DEFAULT_TTS_READY_TIMEOUT_MS = 3_000;

/** How to resume spending, as the status page and `/readyz` say it. */
export const RESUME_HINT =
  'Top up the TTS account: Herald checks again by itself every BUDGET_RECHECK_MINUTES (5 by default), or an operator (BOT_OWNER_IDS, by default the application’s owner) runs /budget recheck in Discord; Herald resumes when the balance is above the floor.';

/** Why spending stopped, in one sentence for the status page and `/readyz`. */
export function describeStop(reason: BlockReason): string {
  switch (reason) {
    case 'floor-reached':
      return 'the balance reached the floor.';
    case 'service-refused':
      return 'the TTS service refused a request for lack of credit.';
    case 'balance-unknown':
      return 'the TTS service reports no balance, so the floor cannot be checked.';
  }
}

/** Options of {@link checkReadiness}. */
export interface ReadinessOptions {
  /** Bound on the TTS check; default {@link DEFAULT_TTS_READY_TIMEOUT_MS}. */
  readonly ttsTimeoutMs?: number;
  /** Bound on the database and budget checks; default {@link DEFAULT_DATABASE_TIMEOUT_MS}. */
  readonly databaseTimeoutMs?: number;
}

/**
 * Runs every readiness check at once, each bounded (the database and budget checks by `databaseTimeoutMs`, the TTS
 * check by `ttsTimeoutMs`), so the answer never waits longer than the longest bound; it never makes a paid call. A
 * probe that throws or does not answer in time fails its own check, never the whole answer.
 */
export async function checkReadiness(
  probes: ReadinessProbes,
  options: ReadinessOptions = {},
): Promise<Readiness> {
  const gateway: CheckResult = probes.gatewayConnected()
    ? { ok: true }
    : { ok: false, detail: 'The Discord gateway is not connected (reconnecting, or the token was refused).' };
  const databaseMs = options.databaseTimeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS;
  const ttsMs = options.ttsTimeoutMs ?? DEFAULT_TTS_READY_TIMEOUT_MS;

  const checkDatabase = async (): Promise<CheckResult> => {
    try {
      await within(databaseMs, 'the database', () => probes.database());
      return { ok: true };
    } catch (error) {
      // A database that drops packets instead of refusing them would otherwise hold this answer for minutes.
      return { ok: false, detail: describeDatabaseFailure(error) };
    }
  };

  const checkTts = async (): Promise<CheckResult> => {
    try {
      await probes.tts(AbortSignal.timeout(ttsMs));
      return { ok: true };
    } catch (error) {
      return {
        ok: false,
        detail: `The TTS service could not list its voices within ${ttsMs} ms: ${messageOf(error)}`,
      };
    }
  };

  const checkBudget = async (): Promise<Readiness['checks']['budget']> => {
    try {
      const status = await within(databaseMs, 'the database', () => probes.budget());
      return status.status === 'active'
        ? { ok: true }
        : {
            ok: false,
            reason: status.reason,
            detail: `Spending stopped: ${describeStop(status.reason)}`,
            resume: RESUME_HINT,
          };
    } catch (error) {
      // The budget's state is in the database: while that is down, this check fails with it, not the whole answer.
      return { ok: false, detail: `The budget's state cannot be read: ${messageOf(error)}` };
    }
  };

  const [database, tts, budget] = await Promise.all([checkDatabase(), checkTts(), checkBudget()]);
  return {
    ready: gateway.ok && database.ok && tts.ok && budget.ok,
    checks: { gateway, database, tts, budget },
  };
}

/**
 * The database probe: a SQLite file must still be where it was opened (a deleted or moved file would silently
 * lose every write at the next restart), and the database (file or PostgreSQL) must answer a query.
 */
export function databaseProbe(db: Database, config: DatabaseConfig): () => Promise<void> {
  return async () => {
    if (config.kind === 'sqlite' && config.path !== ':memory:' && !existsSync(config.path)) {
      throw new Error(`the file ${config.path} is gone`);
    }
    await db.get('SELECT count(*) AS n FROM schema_migrations');
  };
}

/** Why a read of the database failed, in one sentence for `/readyz` and the status page. */
export function describeDatabaseFailure(error: unknown): string {
  return error instanceof DeadlineError
    ? `The database did not answer within ${error.timeoutMs} ms.`
    : `The database does not answer: ${messageOf(error)}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
