import {
  type AccountState,
  type BudgetAlert,
  type BudgetGuard,
  type BudgetGuardOptions,
  type BudgetRequest,
  type BudgetStore,
  createBudgetGuard,
  createBudgetStore,
  type Settlement,
} from '../../src/budget/index.ts';
import { silentLogger } from '../../src/log.ts';
import { type Database, openDatabase } from '../../src/storage/index.ts';
import { TtsInsufficientBalanceError } from '../../src/tts/index.ts';
import type { Backend, DatabaseTarget } from '../support/databases.ts';

/** 2026-01-15 12:00 UTC. */
export const NOON = Date.UTC(2026, 0, 15, 12, 0, 0);

/** Options of {@link makeGuard}. */
export type GuardTestOptions = Partial<Omit<BudgetGuardOptions, 'store' | 'now' | 'logger' | 'onAlert'>> & {
  /** The database to open (a restart opens the same target again); an in-memory SQLite one by default. */
  target?: DatabaseTarget;
  /** A fresh database of this backend, when no target is given. */
  backend?: Backend;
  start?: number;
  /** Written into the store before the guard reads it. */
  account?: Partial<AccountState>;
};

/** A guard on a fresh (or given) database with a settable clock; alerts are collected. */
export async function makeGuard(options: GuardTestOptions = {}): Promise<{
  guard: BudgetGuard;
  store: BudgetStore;
  db: Database;
  alerts: BudgetAlert[];
  clock: { now: number };
}> {
  const { target, backend, start = NOON, account, ...rest } = options;
  const db = target
    ? target.open()
    : backend
      ? (await backend.fresh()).open()
      : openDatabase({ kind: 'sqlite', path: ':memory:' });
  const store = await createBudgetStore(db);
  if (account) await seedAccount(store, account);
  const clock = { now: start };
  const alerts: BudgetAlert[] = [];
  const guard = await createBudgetGuard({
    store,
    floorUsd: 0.5,
    memberCharsPerMinute: 1_000_000,
    logger: silentLogger,
    now: () => clock.now,
    onAlert: (alert) => alerts.push(alert),
    ...rest,
  });
  return { guard, store, db, alerts, clock };
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

/** Reserve, charge, settle (or release on a 402): one generation, start to end. Returns the outcome kind. */
export async function speakOnce(
  guard: BudgetGuard,
  service: ReturnType<typeof fakeService>,
  request: BudgetRequest,
): Promise<string> {
  const outcome = await guard.reserve(request);
  if (outcome.kind !== 'reserved') return outcome.kind;
  let settlement: Settlement;
  try {
    settlement = service.charge(request.characters);
  } catch (error) {
    await guard.release(outcome.reservation, error);
    return 'service-refused';
  }
  await guard.settle(outcome.reservation, settlement);
  return 'spoken';
}

/** A request of `characters` by member `userId` (default `m1`) in server `guildId` (default `g1`). */
export function req(characters: number, userId = 'm1', guildId = 'g1'): BudgetRequest {
  return { guildId, userId, characters };
}

/** Writes a known account state (balance, price, …) into a store before a guard reads it. */
export async function seedAccount(store: BudgetStore, state: Partial<AccountState>): Promise<void> {
  await store.saveAccount({ ...(await store.account()), ...state });
}
