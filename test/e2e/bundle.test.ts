import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DiscordEmulator, type Guild, type Member, shardOf } from '../../emulators/discord/index.ts';
import type { TtsEmulator } from '../../emulators/tts/index.ts';
import { buildBundle, isFresh } from '../../scripts/build.ts';
import { linesOf, run, type Spawned } from '../support/process.ts';
import { closeShardWorld, type ShardWorld, startShardWorld } from '../support/shard-world.ts';
import { heraldEnv } from './harness.ts';

// `npm start` and `npm run start:shards` run the bundle scripts/build.ts makes of the sources (dist/). Built here
// from the tree into a folder of its own inside the repository (where node_modules is found, as from dist/), then
// started as an operator starts it: one process, and a manager with shard processes, each speaking under DAVE.

const ROOT = join(import.meta.dirname, '..', '..');
const SHARDS = 2;

let world: ShardWorld | undefined;
let discord: DiscordEmulator;
let tts: TtsEmulator;
let outDir: string;
const groups: Spawned[] = [];

beforeAll(async () => {
  world = await startShardWorld('herald-bundle-');
  ({ discord, tts } = world);
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  outDir = join(mkdtempSync(join(cache, 'herald-bundle-test-')), 'dist');
  await buildBundle(outDir);
}, 60_000);

afterAll(async () => {
  await closeShardWorld(world, groups);
  if (outDir) rmSync(join(outDir, '..'), { recursive: true, force: true });
});

function serverOnShard(shard: number, name: string): { guild: Guild; member: Member } {
  for (;;) {
    const guild = discord.createGuild({ name });
    guild.addTextChannel('chat');
    if (shardOf(guild.id, SHARDS) !== shard) continue;
    const room = guild.addVoiceChannel('Room');
    const member = guild.addMember({ name: `${name} member` });
    guild.joinVoice(member, room);
    return { guild, member };
  }
}

function start(entry: string, env: Record<string, string>): Spawned {
  if (!world) throw new Error('no world');
  const group = run(
    join(outDir, entry),
    [],
    {
      ...heraldEnv(discord, tts, join(world.dir, `${entry.replaceAll('/', '-')}.sqlite`)),
      NODE_EXTRA_CA_CERTS: world.caPath,
      LOG_LEVEL: 'info',
      ...env,
    },
    undefined,
    { group: true },
  );
  groups.push(group);
  return group;
}

async function expectHeard(server: { guild: Guild; member: Member }, text: string): Promise<void> {
  const voice = discord.voice(server.guild);
  voice.clear();
  const reply = await discord.slash(server.member, 'speak', { text });
  expect(reply.content).toMatch(/^(Speaking now|Joining your channel)/);
  await voice.untilFrames(10, { timeoutMs: 20_000 });
}

describe('the bundle npm start runs', () => {
  it('records what it was built from: a change to any of it, or no record, makes it stale', () => {
    expect(isFresh(outDir)).toBe(true);
    const stampPath = join(outDir, '.stamp.json');
    const stamp = readFileSync(stampPath, 'utf8');
    const parsed = JSON.parse(stamp) as { files: Record<string, string> };
    // Herald's own modules are in it, from both entries and the modules they load later.
    expect(Object.keys(parsed.files)).toEqual(
      expect.arrayContaining(['src/index.ts', 'src/shard/main.ts', 'src/herald.ts', 'commands/speak.ts']),
    );
    try {
      parsed.files['src/herald.ts'] = '0'.repeat(64);
      writeFileSync(stampPath, JSON.stringify(parsed));
      expect(isFresh(outDir)).toBe(false);
      rmSync(stampPath);
      expect(isFresh(outDir)).toBe(false);
    } finally {
      writeFileSync(stampPath, stamp);
    }
    expect(isFresh(outDir)).toBe(true);
  });

  it('one process: speaks under DAVE, and a SIGTERM exits 0', async () => {
    const herald = start('index.js', { SHARD_COUNT: '' });
    await herald.until(/"msg":"logged in"/, 30_000);
    await discord.untilReady();
    await expectHeard(serverOnShard(0, 'One process'), 'Said by the bundle in one process.');
    herald.child.kill('SIGTERM');
    expect((await herald.done).code).toBe(0);
  });

  it('shard processes: the manager spawns the bundled entry for each shard, and each speaks', async () => {
    const group = start('shard/main.js', { SHARD_COUNT: String(SHARDS) });
    await group.until(/"msg":"every shard is ready"/, 60_000);
    await discord.untilReady();
    const pids = linesOf(group)
      .filter((l) => l.msg === 'shard process started')
      .map((l) => l.shardPid as number);
    expect(pids).toHaveLength(SHARDS);
    for (const pid of pids) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      expect(argv).toContain(join(outDir, 'index.js'));
    }
    await Promise.all(
      [0, 1].map((shard) =>
        expectHeard(serverOnShard(shard, `Shard ${shard}`), `Said by shard ${shard} of the bundle.`),
      ),
    );
    process.kill(-(group.child.pid as number), 'SIGTERM');
    expect((await group.done).code).toBe(0);
  });
});
