// `npm start`, `npm test` and `npm run sandbox` run this first (npm's pre-scripts): on a fresh clone, or after
// the lock file or the Node that runs Herald changed, it runs scripts/setup.sh; otherwise it is a quick no-op.
// Plain JavaScript on purpose: on a fresh clone it runs under the machine's Node, which may be too old for .ts.
// `--write` records the stamp (setup.sh does so once it has finished, under the Node it chose).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stampPath = join(root, 'node_modules', '.herald-setup');

// npm puts node_modules/.bin first on PATH, so once setup has installed the project's Node, this runs under it:
// the stamp names the Node that will run Herald and load its native addons.
const lock = readFileSync(join(root, 'package-lock.json'));
const stamp = `${createHash('sha256').update(lock).digest('hex')} node ${process.version} ${process.arch}\n`;

if (process.argv.includes('--write')) {
  writeFileSync(stampPath, stamp);
} else if (!existsSync(stampPath) || readFileSync(stampPath, 'utf8') !== stamp) {
  console.error('Herald: installing what is missing (first run, or the lock file or Node changed)…');
  const setup = spawnSync('bash', [join(root, 'scripts', 'setup.sh')], { cwd: root, stdio: 'inherit' });
  if (setup.status !== 0) {
    console.error('Herald: the install failed; see above, then run `npm run setup` again.');
    process.exit(setup.status ?? 1);
  }
}
