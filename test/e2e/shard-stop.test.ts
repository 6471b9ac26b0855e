import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DiscordEmulator, type Guild, type Member, shardOf } from '../../emulators/discord/index.ts';
import { expectedDurationMs, type TtsEmulator } from '../../emulators/tts/index.ts';
import { linesOf, run, type Spawned } from '../support/process.ts';
import { closeShardWorld, type ShardWorld, startShardWorld } from '../support/shard-world.ts';
import { heraldEnv } from './harness.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'shard', 'main.ts');
const SHARDS = 4;
const SENTENCE = 'A sentence long enough to be cut if the deploy were careless, said on shard three.';

let discord: DiscordEmulator;
let tts: TtsEmulator;
let dir: string;
let caPath: string;
const groups: Spawned[] = [];

let world: ShardWorld | undefined;
beforeAll(async () => {
  world = await startShardWorld('herald-shard-stop-');
  ({ discord, tts, dir, caPath } = world);
});

afterAll(() => closeShardWorld(world, groups));

/** A server of shard 3 (Discord's rule: `(guild_id >> 22) % 4`), with a member in voice. */
function serverOnShard3(name: string): { guild: Guild; member: Member } {
  for (;;) {
    const guild = discord.createGuild({ name });
    guild.addTextChannel('chat');
    if (shardOf(guild.id, SHARDS) !== 3) continue;
    const room = guild.addVoiceChannel('Room');
    const member = guild.addMember({ name: `${name} member` });
    guild.joinVoice(member, room);
    return { guild, member };
  }
}

describe('npm run start:shards stopped while shard 3 speaks', () => {
  for (const [shape, signal] of [
    ['the whole process group', (group: Spawned) => process.kill(-(group.child.pid as number), 'SIGTERM')],
    ['the manager alone', (group: Spawned) => group.child.kill('SIGTERM')],
  ] as const) {
    it(`SIGTERM to ${shape}: the sentence is heard to its end, exit 0 within 10 s, nothing respawned`, async () => {
      const { guild, member } = serverOnShard3(`Stop ${shape}`);
      const group = run(
        MAIN,
        [],
        {
          ...heraldEnv(discord, tts, join(dir, `${shape.replaceAll(' ', '-')}.sqlite`)),
          SHARD_COUNT: String(SHARDS),
          NODE_EXTRA_CA_CERTS: caPath,
          LOG_LEVEL: 'info',
          // As operators run it: the manager serves the operations endpoint, and closes it first when it stops.
          METRICS_PORT: '0',
        },
        undefined,
        { group: true },
      );
      groups.push(group);
      await group.until(/"msg":"every shard is ready"/, 120_000);
      await discord.untilReady();

      const voice = discord.voice(guild);
      voice.clear();
      const reply = await discord.slash(member, 'speak', { text: SENTENCE });
      expect(reply.content).toMatch(/^(Speaking now|Joining your channel)/);
      // The stop comes a moment into the sentence.
      await voice.untilFrames(15, { timeoutMs: 20_000 });
      const startedBefore = linesOf(group).filter((l) => l.msg === 'shard process started').length;
      const stoppedAt = Date.now();
      signal(group);
      const { code } = await group.done;
      const exitedAfterMs = Date.now() - stoppedAt;

      const heard = await voice.untilSilent({ quietMs: 800 });
      expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(SENTENCE) - 300);
      expect(code).toBe(0);
      expect(exitedAfterMs).toBeLessThan(10_000);
      const lines = linesOf(group);
      expect(lines.filter((l) => l.msg === 'shard process started')).toHaveLength(startedBefore);
      expect(lines.filter((l) => String(l.msg).includes('starting it again'))).toEqual([]);
    });
  }
});
