import { readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log.ts';
import { SHARD_CACHE_FOLDER } from './config.ts';
import { SUFFIX } from './disk.ts';

/**
 * Readies the machine's cache folder for a sharding manager's shards, before any of them starts: they share the folder
 * itself now, so what shard processes once kept in folders of their own moves to the top (see
 * {@link adoptShardCacheFolders}); the options are those of the older per-shard layout, kept so the manager's call
 * stands. Nothing to do when the folder does not exist.
 */
export async function prepareShardCacheFolders(
  dir: string,
  options: { readonly count: number; readonly firstId: number; readonly logger: Logger },
): Promise<void> {
  await adoptShardCacheFolders(dir, options.logger);
}

/**
 * Adopts the per-shard folders an older Herald left (`shard-<id>`, one per shard process): their entries move to the
 * top of the machine's cache folder, where every process indexes and bounds them (the first to open the folder
 * evicts past `AUDIO_CACHE_MB`), and the folders go, so no disk is lost to orphans. Run before any process opens the
 * folder (by the manager, or by a single process), so no shard is still using them.
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
