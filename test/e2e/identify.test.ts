import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { type DiscordEmulator, startDiscordEmulator } from '../../emulators/discord/index.ts';
import { trustedTestCertificate } from '../../emulators/discord/tls.ts';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { createDatabase } from '../support/postgres.ts';
import { run, type Spawned } from '../support/process.ts';
import { heraldEnv } from './harness.ts';

// Two machines of one bot, started at the same moment: two `npm run start:shards` (SHARD_IDS 0-1 and 2-3 of 4) on one
// PostgreSQL. Discord allows one IDENTIFY per bucket (shard_id % max_concurrency) per 5 s over the whole bot; the
// emulator records each IDENTIFY with its time and bucket, the ground truth here.

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'shard', 'main.ts');
/** Discord's rule. */
const IDENTIFY_WINDOW_MS = 5_000;
const cluster = inject('postgres');

let tts: TtsEmulator;
let dir: string;
let caPath: string;
const started: { discord?: DiscordEmulator; groups: Spawned[] } = { groups: [] };

const describePg = 'url' in cluster ? describe : describe.skip;
if ('skipped' in cluster) {
  describe.skip(`identify across machines — skipped: ${cluster.skipped}`, () => {
    it('two managers on one PostgreSQL never IDENTIFY in one bucket within 5 s', () => {});
  });
}

beforeAll(async () => {
  if (!('url' in cluster)) return;
  tts = await startTtsEmulator({ speed: 8 });
  dir = mkdtempSync(join(tmpdir(), 'herald-identify-'));
  caPath = join(dir, 'ca.pem');
  writeFileSync(caPath, (await trustedTestCertificate()).cert);
});

afterEach(async () => {
  const { groups, discord } = started;
  for (const group of groups.splice(0)) {
    if (group.child.exitCode === null) group.child.kill('SIGTERM');
    await group.done;
  }
  await discord?.close();
  delete started.discord;
});

afterAll(async () => {
  await tts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `npm run start:shards` with `SHARD_IDS` of 4 shards, on `databaseUrl`, not waited for. */
function spawnGroup(discord: DiscordEmulator, databaseUrl: string, ids: string): Spawned {
  const group = run(MAIN, [], {
    ...heraldEnv(discord, tts, join(dir, 'unused.sqlite')),
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '2',
    NODE_EXTRA_CA_CERTS: caPath,
    LOG_LEVEL: 'info',
    SHARD_COUNT: '4',
    SHARD_IDS: ids,
  });
  started.groups.push(group);
  return group;
}

/** The gaps between consecutive IDENTIFYs of each bucket, as the emulator received them. */
function gapsPerBucket(discord: DiscordEmulator): Map<number, number[]> {
  const gaps = new Map<number, number[]>();
  const last = new Map<number, number>();
  for (const identify of [...discord.identifies].sort((a, b) => a.at - b.at)) {
    const previous = last.get(identify.bucket);
    if (previous !== undefined)
      gaps.set(identify.bucket, [...(gaps.get(identify.bucket) ?? []), identify.at - previous]);
    last.set(identify.bucket, identify.at);
  }
  return gaps;
}

describePg('identify across machines: two managers, SHARD_IDS 0-1 and 2-3 of 4, one PostgreSQL', () => {
  // max_concurrency 2: shards 0 and 2 share a bucket, 1 and 3 the other, and each manager starts one shard of each,
  // so both buckets are contended and the test waits one window, not three (with 1, every IDENTIFY of the bot is 5 s
  // after the one before: the same rule, which the unit tests prove on both engines).
  it('started at the same moment, they never IDENTIFY in one bucket within 5 s', async () => {
    const discord = await startDiscordEmulator({ maxConcurrency: 2 });
    started.discord = discord;
    const url = await createDatabase((cluster as { url: string }).url);
    const groups = [spawnGroup(discord, url, '0-1'), spawnGroup(discord, url, '2-3')];
    await Promise.all(groups.map((group) => group.until(/"msg":"every shard is ready"/, 120_000)));

    expect(discord.identifies.map((i) => i.shard?.[0]).sort()).toEqual([0, 1, 2, 3]);
    const gaps = gapsPerBucket(discord);
    expect([...gaps.keys()].sort()).toEqual([0, 1]);
    for (const gap of [...gaps.values()].flat()) expect(gap).toBeGreaterThanOrEqual(IDENTIFY_WINDOW_MS);
    // A shard that waits its turn says so, and for whom (the same line on whichever machine it runs).
    const output = groups.map((group) => group.output()).join('\n');
    expect(output).toMatch(
      /"msg":"another shard identified in this bucket within 5 s; this one waits its turn"/,
    );
  }, 90_000);
});
