import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AccountState,
  type BudgetAlert,
  type BudgetGuard,
  type BudgetGuardOptions,
  type BudgetRequest,
  type BudgetStore,
  createBudgetGuard,
  createSqliteBudgetStore,
  type Settlement,
} from '../../src/budget/index.ts';
import { silentLogger } from '../../src/log.ts';
import { openSqlite } from '../../src/storage/sqlite.ts';
import { TtsInsufficientBalanceError } from '../../src/tts/index.ts';

/** 2026-01-15 12:00 UTC. */
export const NOON = Date.UTC(2026, 0, 15, 12, 0, 0);

/** A guard on an in-memory (or given) store with a settable clock; alerts are collected. */
export function makeGuard(
  options: Partial<Omit<BudgetGuardOptions, 'store' | 'now' | 'logger' | 'onAlert'>> & {
    store?: BudgetStore;
    start?: number;
    /** Written into the store before the guard reads it. */
    account?: Partial<AccountState>;
  } = {},
): {
  guard: BudgetGuard;
  store: BudgetStore;
  alerts: BudgetAlert[];
  clock: { now: number };
} {
  const { store = createSqliteBudgetStore(openSqlite(':memory:')), start = NOON, account, ...rest } = options;
  if (account) store.saveAccount({ ...store.account(), ...account });
  const clock = { now: start };
  const alerts: BudgetAlert[] = [];
  const guard = createBudgetGuard({
    store,
    floorUsd: 0.5,
    memberCharsPerMinute: 1_000_000,
    logger: silentLogger,
    now: () => clock.now,
    onAlert: (alert) => alerts.push(alert),
    ...rest,
  });
  return { guard, store, alerts, clock };
}

/**
 * The service's money rules, as the TTS emulator applies them: cost = characters × price in whole micro-dollars,
 * refused with a 402 (nothing charged) when above the balance.
 */
export function fakeService(balanceUsd: number, pricePerCharUsd = 0.0001) {
  let balanceMicros = Math.round(balanceUsd * 1e6);
  let requests = 0;
  const charges: { characters: number; costUsd: number; requestId: string }[] = [];
  return {
    get balanceUsd() {
      return balanceMicros / 1e6;
    },
    set balanceUsd(value: number) {
      balanceMicros = Math.round(value * 1e6);
    },
    charges,
    /** Charges like the service would; throws the client's 402 error when the balance is short. */
    charge(characters: number): Settlement {
      const costMicros = Math.round(characters * pricePerCharUsd * 1e6);
      requests += 1;
      const requestId = `req-${requests}`;
      if (costMicros > balanceMicros) {
        throw new TtsInsufficientBalanceError('The TTS account cannot pay for this generation', {
          status: 402,
          requestId,
          balanceUsd: balanceMicros / 1e6,
        });
      }
      balanceMicros -= costMicros;
      charges.push({ characters, costUsd: costMicros / 1e6, requestId });
      return { costUsd: costMicros / 1e6, balanceUsd: balanceMicros / 1e6, requestId };
    },
  };
}

/** Reserve, charge, settle (or release on a 402): one generation done synchronously. Returns the outcome kind. */
export function speakOnce(
  guard: BudgetGuard,
  service: ReturnType<typeof fakeService>,
  request: BudgetRequest,
): string {
  const outcome = guard.reserve(request);
  if (outcome.kind !== 'reserved') return outcome.kind;
  try {
    guard.settle(outcome.reservation, service.charge(request.characters));
    return 'spoken';
  } catch (error) {
    guard.release(outcome.reservation, error);
    return 'service-refused';
  }
}

/** A temporary database file path; {@link cleanTempDirs} removes it. */
const dirs: string[] = [];
export function tempDbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-budget-'));
  dirs.push(dir);
  return join(dir, 'herald.sqlite');
}

export function cleanTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A request of `characters` by member `userId` (default `m1`) in server `guildId` (default `g1`). */
export function req(characters: number, userId = 'm1', guildId = 'g1'): BudgetRequest {
  return { guildId, userId, characters };
}

/** Writes a known account state (balance, price, …) into a store before a guard reads it. */
export function seedAccount(store: BudgetStore, state: Partial<AccountState>): void {
  store.saveAccount({ ...store.account(), ...state });
}
