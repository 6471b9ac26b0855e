import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { adoptShardCacheFolders, openDiskCache, prepareShardCacheFolders } from '../../src/cache/index.ts';
import { silentLogger } from '../../src/log.ts';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('readies the folder for shards by adopting every per-shard folder: one folder for the machine, no orphans', async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-cache-shards-'));
  writeFileSync(join(dir, 'aaaa.hac'), 'entry');
  for (const shard of [0, 3, 4, 7]) {
    mkdirSync(join(dir, `shard-${shard}`));
    writeFileSync(join(dir, `shard-${shard}`, `s${shard}.hac`), 'entry');
  }
  await prepareShardCacheFolders(dir, { count: 4, firstId: 0, logger: silentLogger });
  expect(readdirSync(dir).sort()).toEqual(['aaaa.hac', 's0.hac', 's3.hac', 's4.hac', 's7.hac']);
});

it('leaves a missing folder missing', async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-cache-shards-'));
  const missing = join(dir, 'audio-cache');
  await prepareShardCacheFolders(missing, { count: 2, firstId: 0, logger: silentLogger });
  expect(existsSync(missing)).toBe(false);
});

it('a single process takes the shard folders’ entries to the top, then bounds them as its own', async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-cache-shards-'));
  writeFileSync(join(dir, 'top.hac'), 'x');
  for (const shard of [0, 1]) {
    mkdirSync(join(dir, `shard-${shard}`));
    writeFileSync(join(dir, `shard-${shard}`, `s${shard}.hac`), 'x');
    writeFileSync(join(dir, `shard-${shard}`, `s${shard}.2b3c4d.tmp`), 'half');
  }
  await adoptShardCacheFolders(dir, silentLogger);
  expect(readdirSync(dir).sort()).toEqual(['s0.hac', 's1.hac', 'top.hac']);
  // What it opens next sees them all (they are not valid entries, so none is read; each is counted and bounded).
  const disk = await openDiskCache({ dir, maxBytes: 1024, maxAgeMs: 86_400_000, logger: silentLogger });
  expect(disk.size).toBe(3);
});
