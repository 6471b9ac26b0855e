/**
 * `npm run soak -- --minutes 60 [--seed N] [--servers 50] [--fault-every SECONDS] [--postgres] [--shards N]`: drives
 * Herald for that long under random traffic and faults from both emulators, prints a summary, writes
 * bench/results/soak-<date>-<commit>-<seed>[-postgres][-<N>-shards].json and exits 1 when an invariant was violated.
 * The seed is printed first: `--seed` replays the same choices. `--postgres` runs Herald on a throwaway PostgreSQL
 * cluster (Debian's `postgresql`), which the soak stops and starts again now and then; `--shards N` runs it as the
 * sharding manager with N shard processes, as `npm run start:shards`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDatabase, startPostgres } from '../test/support/postgres.ts';
import { runSoak } from './run.ts';
import { formatSummary } from './summary.ts';

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = args.findIndex((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
  if (at < 0) return undefined;
  const arg = args[at] ?? '';
  return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[at + 1];
};
const minutes = Number(option('minutes') ?? 60);
const servers = Number(option('servers') ?? 50);
const faultEverySeconds = Number(option('fault-every') ?? 5);
const seed = Number(option('seed') ?? Math.floor(Math.random() * 2 ** 31));
const postgres = args.includes('--postgres');
const shards = Number(option('shards') ?? 1);
if (!(minutes > 0) || !(servers > 0) || !Number.isInteger(seed) || !Number.isInteger(shards) || shards < 1) {
  console.error(
    'usage: npm run soak -- --minutes 60 [--seed N] [--servers 50] [--fault-every 5] [--postgres] [--shards N]',
  );
  process.exit(2);
}
const cluster = postgres ? await startPostgres() : undefined;
if (cluster?.kind === 'missing') {
  console.error(`soak: --postgres needs PostgreSQL: ${cluster.reason}`);
  process.exit(2);
}
console.log(
  `soak: seed ${seed} (replay with --seed ${seed}), ${servers} servers, ${minutes} min${postgres ? ', PostgreSQL' : ''}${shards > 1 ? `, ${shards} shards` : ''}`,
);
const result = await (async () => {
  try {
    return await runSoak({
      minutes,
      servers,
      seed,
      faultEverySeconds,
      shards,
      postgres:
        cluster?.kind === 'running'
          ? { url: await createDatabase(cluster.url), halt: cluster.halt, resume: cluster.resume }
          : undefined,
      progress: (line) => console.log(`soak: ${line}`),
    });
  } finally {
    if (cluster?.kind === 'running') await cluster.stop();
  }
})();
console.log(formatSummary(result));
const dir = join(import.meta.dirname, '..', 'bench', 'results');
mkdirSync(dir, { recursive: true });
const variant = `${postgres ? '-postgres' : ''}${shards > 1 ? `-${shards}-shards` : ''}`;
const file = join(
  dir,
  `soak-${result.startedAt.slice(0, 10)}-${result.machine.commit}-${seed}${variant}.json`,
);
writeFileSync(file, `${JSON.stringify({ ...result, heraldLogTail: undefined }, null, 2)}\n`);
console.log(`written to ${file}`);
if (result.violations.length > 0) {
  console.log(`\nHerald's log (tail):\n${result.heraldLogTail.slice(-5_000)}`);
  process.exit(1);
}
