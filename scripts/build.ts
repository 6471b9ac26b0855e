/**
 * `npm run build`, and the first step of `npm start` / `npm run start:shards`: Herald's two process entries
 * (src/index.ts, src/shard/main.ts) bundled with discord.js and the other pure-JavaScript dependencies into dist/, so
 * that a process loads a few files instead of about a thousand modules. On a restart with four shard processes on 2
 * cores, Node loading those modules in every process at once was most of the way back to voice
 * (docs/gateway-sessions.md, "Restart time"). The sources stay the truth: tests run them, and `npm start` rebuilds
 * dist/ whenever a file that went into it, the lock file, a patch, this script or Node changed (a quick check of a
 * stamp otherwise). `--force` rebuilds in any case.
 *
 * Left out of the bundle and loaded from node_modules as before: native addons, and packages that find their own
 * files at run time (pino's worker-thread transports).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build } from 'rolldown';

const ROOT = join(import.meta.dirname, '..');
/** Where `npm start` runs Herald from. */
export const DIST = join(ROOT, 'dist');
const STAMP = '.stamp.json';

/** Loaded from node_modules at run time: native addons, packages that locate their own files, optional extras. */
const EXTERNAL = [
  /^node:/,
  '@discordjs/opus',
  'sodium-native',
  /^@snazzah\/davey/,
  'pino',
  'pino-pretty',
  'pg-native',
  'bufferutil',
  'utf-8-validate',
  'zlib-sync',
  'ffmpeg-static',
];

interface Stamp {
  /** What the bundle was built from besides its own modules: Node, the lock file, the patches, this script. */
  readonly toolchain: string;
  /** Each of Herald's own files that went into the bundle (relative to the root), with its hash. */
  readonly files: Record<string, string>;
}

const hashOf = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

function toolchain(): string {
  const patches = join(ROOT, 'patches');
  const parts = [
    `node ${process.version} ${process.arch}`,
    hashOf(readFileSync(join(ROOT, 'package-lock.json'))),
    hashOf(readFileSync(import.meta.filename)),
    ...readdirSync(patches)
      .filter((name) => name.endsWith('.patch'))
      .sort()
      .map((name) => `${name} ${hashOf(readFileSync(join(patches, name)))}`),
  ];
  return hashOf(parts.join('\n'));
}

/** Whether `outDir` holds a bundle of what is in the tree now. */
export function isFresh(outDir = DIST): boolean {
  let stamp: Stamp;
  try {
    stamp = JSON.parse(readFileSync(join(outDir, STAMP), 'utf8')) as Stamp;
  } catch {
    return false;
  }
  if (stamp.toolchain !== toolchain()) return false;
  return Object.entries(stamp.files).every(([file, hash]) => {
    try {
      return hashOf(readFileSync(join(ROOT, file))) === hash;
    } catch {
      return false;
    }
  });
}

/**
 * Bundles Herald into `outDir` (built beside it, then put in its place: a process starting meanwhile finds the old
 * bundle or the new one, never half of one). `outDir` must lie inside this repository, where node_modules is found.
 */
export async function buildBundle(outDir = DIST): Promise<void> {
  const building = `${outDir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  const files: Record<string, string> = {};
  try {
    const output = await build({
      input: { index: join(ROOT, 'src', 'index.ts'), 'shard/main': join(ROOT, 'src', 'shard', 'main.ts') },
      platform: 'node',
      external: EXTERNAL,
      // discord.js's broadcastEval uses a direct eval, which is what it is for.
      onLog: (level, log, handler) => {
        if (log.code !== 'EVAL') handler(level, log);
      },
      output: {
        dir: building,
        format: 'esm',
        chunkFileNames: 'chunks/[name]-[hash].js',
        // For stack traces that name Herald's sources: NODE_OPTIONS=--enable-source-maps (off by default: parsing the
        // maps adds about 0.1 s of CPU to every process's start).
        sourcemap: true,
      },
    });
    for (const chunk of output.output) {
      if (chunk.type !== 'chunk') continue;
      for (const id of chunk.moduleIds) {
        const file = relative(ROOT, id);
        if (file.startsWith('..') || file.startsWith('node_modules') || file.includes('\0')) continue;
        files[file] = hashOf(readFileSync(id));
      }
    }
    writeFileSync(join(building, STAMP), `${JSON.stringify({ toolchain: toolchain(), files }, null, 1)}\n`);
    const old = `${outDir}.old-${process.pid}`;
    if (existsSync(outDir)) renameSync(outDir, old);
    renameSync(building, outDir);
    rmSync(old, { recursive: true, force: true });
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

/** Builds dist/ when it does not match the tree; true when it did. */
export async function ensureBundle(outDir = DIST): Promise<boolean> {
  if (isFresh(outDir)) return false;
  await buildBundle(outDir);
  return true;
}

if (import.meta.main) {
  const startedAt = performance.now();
  try {
    const built = process.argv.includes('--force')
      ? await buildBundle().then(() => true)
      : await ensureBundle();
    if (built) {
      const ms = Math.round(performance.now() - startedAt);
      process.stderr.write(`Herald: bundled into ${relative(process.cwd(), DIST) || '.'} in ${ms} ms\n`);
    }
  } catch (error) {
    process.stderr.write(`Herald: the bundle could not be built: ${String(error)}\n`);
    process.exit(1);
  }
}
