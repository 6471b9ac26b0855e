/**
 * The world of an end-to-end test that starts whole process groups (`npm run start:shards`, `npm start`): both
 * emulators, a folder holding the emulated voice gateway's CA, and the groups spawned, killed at the end whatever
 * became of the test.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DiscordEmulator, startDiscordEmulator } from '../../emulators/discord/index.ts';
import { trustedTestCertificate } from '../../emulators/discord/tls.ts';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import type { Spawned } from './process.ts';

/** What {@link startShardWorld} made. */
export interface ShardWorld {
  readonly discord: DiscordEmulator;
  readonly tts: TtsEmulator;
  /** A throwaway folder (databases, logs), removed by {@link closeShardWorld}. */
  readonly dir: string;
  /** The CA of the emulated voice gateway's certificate, for NODE_EXTRA_CA_CERTS. */
  readonly caPath: string;
}

/**
 * Starts the emulators: Discord with many identify buckets (a manager starts a shard every 344 ms rather than every
 * 5.5 s) and the TTS service at real time (a sentence is still being said when a stop comes).
 */
export async function startShardWorld(prefix: string): Promise<ShardWorld> {
  const [discord, tts] = await Promise.all([
    startDiscordEmulator({ maxConcurrency: 16 }),
    startTtsEmulator({ speed: 1 }),
  ]);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const caPath = join(dir, 'ca.pem');
  writeFileSync(caPath, (await trustedTestCertificate()).cert);
  return { discord, tts, dir, caPath };
}

/** Kills every group still running (SIGKILL to its process group), closes the emulators, removes the folder. */
export async function closeShardWorld(
  world: Partial<ShardWorld> | undefined,
  groups: readonly Spawned[],
): Promise<void> {
  for (const group of groups) {
    if (group.child.exitCode === null && group.child.pid !== undefined) {
      try {
        process.kill(-group.child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
  await Promise.all([world?.discord?.close(), world?.tts?.close()]);
  if (world?.dir) rmSync(world.dir, { recursive: true, force: true });
}
