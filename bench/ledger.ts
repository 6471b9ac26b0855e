/**
 * What the budget's ledger costs the event loop when many members ask at once: N reservations made together through
 * the real guard on a SQLite file (WAL, as Herald opens it), then their N settlements together, as a P4 step's
 * `/speak` burst makes them. Prints CPU ms per reservation and per settlement (user + system, this process only)
 * and the wall time of each burst, for N = 100 … 1,000, each the median of three rounds on a fresh database.
 * One process: a shard's share of the burst; with several shards on one file the same work also holds the write
 * lock the others wait for. Run: `npm run bench:ledger`; writes bench/results/ledger-<date>-<commit>.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBudgetGuard, createBudgetStore } from '../src/budget/index.ts';
import { silentLogger } from '../src/log.ts';
import { openDatabase } from '../src/storage/index.ts';
import { cpuMsSince, median } from './cpu-time.ts';
import { machineOf, writeResult } from './result-file.ts';

const BURSTS = [100, 250, 500, 1_000] as const;
const ROUNDS = 3;
const CHARACTERS = 500;
const PRICE_PER_CHAR_USD = 0.000_03;

interface Round {
  readonly reserveCpuMs: number;
  readonly reserveWallMs: number;
  readonly settleCpuMs: number;
  readonly settleWallMs: number;
}

/** One burst of `n` on a fresh database: every reservation at once, then every settlement at once. */
async function burst(n: number): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'herald-ledger-'));
  const db = openDatabase({ kind: 'sqlite', path: join(dir, 'herald.sqlite') });
  try {
    const store = await createBudgetStore(db);
    // A known balance and a learned price: the guard reserves concurrently (it learns one generation at a time).
    await store.saveAccount({
      ...(await store.account()),
      balanceUsd: 1_000,
      balanceSeenAt: Date.now(),
      pricePerCharUsd: PRICE_PER_CHAR_USD,
      priceCharacters: 10_000,
    });
    const guard = await createBudgetGuard({
      store,
      floorUsd: 1,
      memberCharsPerMinute: 1_000_000,
      logger: silentLogger,
    });
    let cpu = process.cpuUsage();
    let wall = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        guard.reserve({ guildId: `guild-${i}`, userId: `member-${i}`, characters: CHARACTERS }),
      ),
    );
    const reserveCpuMs = cpuMsSince(cpu);
    const reserveWallMs = performance.now() - wall;
    const reservations = outcomes.map((outcome) => {
      if (outcome.kind !== 'reserved') throw new Error(`a reservation was refused: ${outcome.kind}`);
      return outcome.reservation;
    });
    cpu = process.cpuUsage();
    wall = performance.now();
    let balanceUsd = 1_000;
    await Promise.all(
      reservations.map((reservation, i) => {
        balanceUsd -= CHARACTERS * PRICE_PER_CHAR_USD;
        return guard.settle(reservation, {
          costUsd: CHARACTERS * PRICE_PER_CHAR_USD,
          balanceUsd,
          requestId: `request-${i}`,
        });
      }),
    );
    return {
      reserveCpuMs,
      reserveWallMs,
      settleCpuMs: cpuMsSince(cpu),
      settleWallMs: performance.now() - wall,
    };
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// A first burst warms the code paths (compilation) so that the first measured one is not dearer for it.
await burst(100);
// Figures to the microsecond.
const ms = (values: number[]): number => median(values, 3);
const results = [];
for (const n of BURSTS) {
  const rounds: Round[] = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push(await burst(n));
  results.push({
    burst: n,
    reserveCpuMsEach: ms(rounds.map((r) => r.reserveCpuMs / n)),
    settleCpuMsEach: ms(rounds.map((r) => r.settleCpuMs / n)),
    reserveWallMs: ms(rounds.map((r) => r.reserveWallMs)),
    settleWallMs: ms(rounds.map((r) => r.settleWallMs)),
  });
}

const machine = machineOf();
const startedAt = new Date().toISOString();
console.log(`${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, commit ${machine.commit}`);
console.log(`a burst of N reservations, then N settlements, on SQLite (median of ${ROUNDS} rounds)`);
console.log('N        CPU per reservation   CPU per settlement   reservations took   settlements took');
for (const r of results) {
  console.log(
    `${String(r.burst).padEnd(9)}${`${r.reserveCpuMsEach} ms`.padEnd(22)}${`${r.settleCpuMsEach} ms`.padEnd(21)}${`${r.reserveWallMs} ms`.padEnd(20)}${r.settleWallMs} ms`,
  );
}
const file = writeResult('ledger', startedAt, machine, {
  rounds: ROUNDS,
  characters: CHARACTERS,
  results,
});
console.log(`written to ${file}`);
