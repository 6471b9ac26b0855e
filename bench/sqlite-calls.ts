/**
 * What SQLite costs Herald, statement by statement: preloaded into Herald's processes, it counts every `node:sqlite`
 * call (statements, `exec`, `prepare`) with its wall time and the thread's CPU time, and when the process exits
 * writes `sqlite-calls-<pid>.json` (the calls, dearest first) to SQLITE_CALLS_DIR (default: the system's temporary
 * folder) and prints one line of totals. The kernel counts CPU time in ticks, so one call's figure means nothing;
 * summed over thousands it is a fair sample. Run:
 * `npm run bench -- --quick --servers=400 --seconds=3 --shards=4 --tts=at-once --nice=0
 *  --node-flags="--import=./bench/sqlite-calls.ts"`.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, StatementSync } from 'node:sqlite';

/** Per call site: calls, CPU ms, wall ms, the longest call's wall ms, and the calls that took over 5 ms. */
const calls = new Map<
  string,
  { calls: number; cpuMs: number; wallMs: number; maxWallMs: number; over5ms: number; over5msCpuMs: number }
>();

const cpuMs = (): number => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

function counted<T>(key: string, call: () => T): T {
  const cpu = cpuMs();
  const wall = performance.now();
  try {
    return call();
  } finally {
    const entry = calls.get(key) ?? {
      calls: 0,
      cpuMs: 0,
      wallMs: 0,
      maxWallMs: 0,
      over5ms: 0,
      over5msCpuMs: 0,
    };
    const spentCpu = cpuMs() - cpu;
    const spentWall = performance.now() - wall;
    entry.calls++;
    entry.cpuMs += spentCpu;
    entry.wallMs += spentWall;
    entry.maxWallMs = Math.max(entry.maxWallMs, spentWall);
    if (spentWall > 5) {
      entry.over5ms++;
      entry.over5msCpuMs += spentCpu;
    }
    calls.set(key, entry);
  }
}

const statement = StatementSync.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
for (const method of ['all', 'get', 'run'] as const) {
  const original = statement[method] as (...args: unknown[]) => unknown;
  statement[method] = function (this: StatementSync, ...args: unknown[]) {
    return counted(this.sourceSQL.replace(/\s+/g, ' ').slice(0, 160), () => original.apply(this, args));
  };
}
const database = DatabaseSync.prototype as unknown as Record<string, (sql: string) => unknown>;
for (const method of ['exec', 'prepare'] as const) {
  const original = database[method] as (sql: string) => unknown;
  database[method] = function (this: DatabaseSync, sql: string) {
    const key = method === 'exec' ? `exec: ${sql.replace(/\s+/g, ' ').slice(0, 60)}` : 'prepare';
    return counted(key, () => original.call(this, sql));
  };
}

process.on('exit', () => {
  const rows = [...calls].map(([sql, entry]) => ({ sql, ...entry })).sort((a, b) => b.cpuMs - a.cpuMs);
  if (rows.length === 0) return;
  const total = rows.reduce(
    (sum, row) => ({
      calls: sum.calls + row.calls,
      cpuMs: sum.cpuMs + row.cpuMs,
      wallMs: sum.wallMs + row.wallMs,
      over5ms: sum.over5ms + row.over5ms,
    }),
    { calls: 0, cpuMs: 0, wallMs: 0, over5ms: 0 },
  );
  const file = join(process.env.SQLITE_CALLS_DIR ?? tmpdir(), `sqlite-calls-${process.pid}.json`);
  writeFileSync(file, `${JSON.stringify({ pid: process.pid, total, calls: rows }, null, 1)}\n`);
  process.stderr.write(
    `sqlite calls (pid ${process.pid}): ${total.calls} calls, ${total.cpuMs.toFixed(0)} ms CPU, ${total.wallMs.toFixed(0)} ms wall, ${total.over5ms} calls over 5 ms; ${file}\n`,
  );
});
