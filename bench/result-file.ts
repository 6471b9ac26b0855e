/** Where a micro-benchmark (`npm run bench:dave-frame`, `bench:ledger`) writes its figures, with the machine's. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { commitOf } from './common.ts';

/** The machine a figure came from. */
export function machineOf(): { cpus: number; cpuModel: string; node: string; commit: string } {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    commit: commitOf(),
  };
}

/**
 * Writes `{ machine, startedAt, ...figures }` (`machine` as the run printed it, from {@link machineOf}) to
 * bench/results/<name>-<date>-<commit>.json (a later run of the same commit on the same day replaces it); returns
 * the path.
 */
export function writeResult(
  name: string,
  startedAt: string,
  machine: ReturnType<typeof machineOf>,
  figures: Record<string, unknown>,
): string {
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${startedAt.slice(0, 10)}-${machine.commit}.json`);
  writeFileSync(file, `${JSON.stringify({ machine, startedAt, ...figures }, null, 2)}\n`);
  return file;
}
