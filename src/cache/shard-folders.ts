import { mkdir, readdir, rename, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log.ts';
import { SHARD_CACHE_FOLDER, shardCacheFolder } from './config.ts';
import { SUFFIX, TEMP_SUFFIX } from './disk.ts';

/**
 * Readies the machine's cache folder for a sharding manager's shards, each of which keeps a folder of its own in
 * it (see parseCacheConfig). Entries a single process left at the top move into the first shard's folder (that
 * shard evicts what passes its share when it opens it), rather than be paid for again; an unfinished write there
 * is deleted; folders of shards at or past `count` (after resharding to fewer) are deleted, since no process
 * bounds them any more. Nothing to do when the folder does not exist.
 */
export async function prepareShardCacheFolders(
  dir: string,
  options: { readonly count: number; readonly firstId: number; readonly logger: Logger },
): Promise<void> {
  const names = await readdir(dir).catch(() => undefined);
  if (!names) return;
  const first = join(dir, shardCacheFolder(options.firstId));
  let moved = 0;
  const removed: string[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const shard = SHARD_CACHE_FOLDER.exec(name);
    if (shard) {
      if (Number(shard[1]) >= options.count) {
        await rm(path, { recursive: true, force: true });
        removed.push(name);
      }
    } else if (name.endsWith(TEMP_SUFFIX)) {
      await unlink(path).catch(() => {});
    } else if (name.endsWith(SUFFIX)) {
      await mkdir(first, { recursive: true, mode: 0o700 });
      await rename(path, join(first, name)).catch(() => {});
      moved++;
    }
  }
  if (moved > 0 || removed.length > 0) {
    options.logger.info('audio cache folder readied for shards', {
      movedToFirstShard: moved,
      removedFolders: removed.join(','),
    });
  }
}

/**
 * The other way, for a single process (not a sharding manager's shard) about to open the machine's cache folder:
 * entries that shard processes kept in `shard-<id>` folders there move to the top, where this process indexes and
 * bounds them (it evicts past `AUDIO_CACHE_MB` when it opens the folder), and the folders go. A second Herald on the
 * same folder would run the same bot twice, which is not supported, so no shard can still be using them.
 */
export async function adoptShardCacheFolders(dir: string, logger: Logger): Promise<void> {
  const names = await readdir(dir).catch(() => undefined);
  if (!names) return;
  let moved = 0;
  const adopted: string[] = [];
  for (const name of names) {
    if (!SHARD_CACHE_FOLDER.test(name)) continue;
    const folder = join(dir, name);
    for (const file of (await readdir(folder).catch(() => [])) as string[]) {
      if (!file.endsWith(SUFFIX)) continue;
      await rename(join(folder, file), join(dir, file)).then(
        () => moved++,
        () => {},
      );
    }
    await rm(folder, { recursive: true, force: true });
    adopted.push(name);
  }
  if (adopted.length > 0) {
    logger.info("audio cache: the shard folders' entries moved to the top", {
      entries: moved,
      folders: adopted.join(','),
    });
  }
}
