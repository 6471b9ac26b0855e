/**
 * `npm run soak -- --minutes 60 [--seed N] [--servers 50] [--fault-every SECONDS]`: drives Herald for that long under random traffic and
 * faults from both emulators, prints a summary, writes bench/results/soak-<date>-<commit>-<seed>.json and exits 1
 * when an invariant was violated. The seed is printed first: `--seed` replays the same choices.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
if (!(minutes > 0) || !(servers > 0) || !Number.isInteger(seed)) {
  console.error('usage: npm run soak -- --minutes 60 [--seed N] [--servers 50] [--fault-every 5]');
  process.exit(2);
}
console.log(`soak: seed ${seed} (replay with --seed ${seed}), ${servers} servers, ${minutes} min`);
const result = await runSoak({
  minutes,
  servers,
  seed,
  faultEverySeconds,
  progress: (line) => console.log(`soak: ${line}`),
});
console.log(formatSummary(result));
const dir = join(import.meta.dirname, '..', 'bench', 'results');
mkdirSync(dir, { recursive: true });
const file = join(dir, `soak-${result.startedAt.slice(0, 10)}-${result.machine.commit}-${seed}.json`);
writeFileSync(file, `${JSON.stringify({ ...result, heraldLogTail: undefined }, null, 2)}\n`);
console.log(`written to ${file}`);
if (result.violations.length > 0) {
  console.log(`\nHerald's log (tail):\n${result.heraldLogTail.slice(-5_000)}`);
  process.exit(1);
}
