// `npm start`, `npm test` and `npm run sandbox` run this first (npm's pre-scripts): on a fresh clone, or after
// the lock file, the patches or the Node that runs Herald changed, it runs scripts/setup.sh; otherwise it is a
// quick no-op.
// Plain JavaScript on purpose: on a fresh clone it runs under the machine's Node, which may be too old for .ts.
// `--write` records the stamp (setup.sh does so once it has finished, under the Node it chose).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stampPath = join(root, 'node_modules', '.herald-setup');

// npm puts node_modules/.bin first on PATH, so once setup has installed the project's Node, this runs under it:
// the stamp names the Node that will run Herald and load its native addons.
// The patches count too: a checkout that pulls a new one must apply it, not run the dependency without it.
const hash = createHash('sha256').update(readFileSync(join(root, 'package-lock.json')));
const patches = join(root, 'patches');
for (const name of readdirSync(patches)
  .filter((file) => file.endsWith('.patch'))
  .sort()) {
  hash.update(name).update(readFileSync(join(patches, name)));
}
const stamp = `${hash.digest('hex')} node ${process.version} ${process.arch}\n`;

if (process.argv.includes('--write')) {
  writeFileSync(stampPath, stamp);
} else if (!existsSync(stampPath) || readFileSync(stampPath, 'utf8') !== stamp) {
  console.error(
    'Herald: installing what is missing (first run, or the lock file, the patches or Node changed)…',
  );
  const setup = spawnSync('bash', [join(root, 'scripts', 'setup.sh')], { cwd: root, stdio: 'inherit' });
  if (setup.status !== 0) {
    console.error('Herald: the install failed; see above, then run `npm run setup` again.');
    process.exit(setup.status ?? 1);
  }
}
