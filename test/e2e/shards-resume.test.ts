import { join } from 'node:path';
import { PermissionFlagsBits } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type Channel,
  type DiscordEmulator,
  type Guild,
  type Member,
  shardOf,
} from '../../emulators/discord/index.ts';
import type { TtsEmulator } from '../../emulators/tts/index.ts';
import { run, type Spawned } from '../support/process.ts';
import { closeShardWorld, type ShardWorld, startShardWorld } from '../support/shard-world.ts';
import { heraldEnv } from './harness.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'shard', 'main.ts');
const ONE = join(import.meta.dirname, '..', '..', 'src', 'index.ts');
const SHARDS = 4;

let discord: DiscordEmulator;
let tts: TtsEmulator;
let dir: string;
let caPath: string;
const groups: Spawned[] = [];

let world: ShardWorld | undefined;
beforeAll(async () => {
  world = await startShardWorld('herald-shards-resume-');
  ({ discord, tts, dir, caPath } = world);
});

afterAll(() => closeShardWorld(world, groups));

interface Server {
  readonly guild: Guild;
  readonly text: Channel;
  readonly room: Channel;
  readonly admin: Member;
  readonly member: Member;
}

/** One server on each shard (Discord's rule: `(guild_id >> 22) % 4`), with a member in voice. */
function oneServerPerShard(): Server[] {
  const servers: (Server | undefined)[] = new Array(SHARDS).fill(undefined);
  while (servers.includes(undefined)) {
    const guild = discord.createGuild({ name: `Resume ${servers.filter(Boolean).length}` });
    const shard = shardOf(guild.id, SHARDS);
    if (servers[shard]) continue;
    const text = guild.addTextChannel('chat');
    const room = guild.addVoiceChannel('Room');
    const admin = guild.addMember({ name: `Admin ${shard}`, permissions: PermissionFlagsBits.ManageGuild });
    const member = guild.addMember({ name: `Member ${shard}` });
    guild.joinVoice(member, room);
    servers[shard] = { guild, text, room, admin, member };
  }
  return servers as Server[];
}

/** How many times the service was asked to say something containing `text`. */
const asked = (text: string): number =>
  tts.requests.filter(
    (request) =>
      request.path.endsWith('/speech/generate') &&
      ((request.body as { text?: string } | undefined)?.text ?? '').includes(text),
  ).length;

describe('Herald restarted on purpose, as operators run it', () => {
  it('npm run start:shards RESUMEs every shard (no IDENTIFY), rejoins every voice channel and goes on; a message sent meanwhile is read once', async () => {
    const servers = oneServerPerShard();
    const env = {
      ...heraldEnv(discord, tts, join(dir, 'herald.sqlite')),
      SHARD_COUNT: String(SHARDS),
      NODE_EXTRA_CA_CERTS: caPath,
      LOG_LEVEL: 'info',
    };
    const start = async (): Promise<Spawned> => {
      const group = run(MAIN, [], env, undefined, { group: true });
      groups.push(group);
      await group.until(/"msg":"every shard is ready"/, 120_000);
      return group;
    };
    const first = await start();
    await discord.untilReady();
    const reading = servers[0] as Server;
    await discord.slash(
      reading.admin,
      'autoread',
      { channel: reading.text, enabled: true },
      { subcommand: 'channel' },
    );
    for (const [shard, server] of servers.entries()) {
      await discord.slash(server.member, 'speak', {
        text: `A first sentence on shard ${shard}, long enough to cut.`,
      });
      await discord.slash(server.member, 'speak', { text: `The rest of shard ${shard}'s queue.` });
    }
    for (const server of servers) await discord.voice(server.guild).untilFrames(5, { timeoutMs: 20_000 });
    const before = servers.map((_, shard) => discord.gatewayCounts(shard));

    process.kill(-(first.child.pid as number), 'SIGTERM');
    expect((await first.done).code).toBe(0);
    for (const server of servers) discord.voice(server.guild).clear();
    discord.sendMessage(reading.member, reading.text, 'Posted while every shard was away.');

    const second = await start();
    for (const [shard, counts] of before.entries()) {
      expect(discord.gatewayCounts(shard)).toEqual({
        identifies: counts.identifies,
        resumes: counts.resumes + 1,
      });
    }
    expect(second.output()).toMatch(/"resuming":"0,1,2,3"/);
    for (const [shard, server] of servers.entries()) {
      await vi.waitFor(() => expect(server.guild.botVoiceChannelId()).toBe(server.room.id), {
        timeout: 15_000,
      });
      await vi.waitFor(() => expect(asked(`The rest of shard ${shard}'s queue.`)).toBe(1), {
        timeout: 20_000,
      });
    }
    await vi.waitFor(() => expect(asked('Posted while every shard was away.')).toBe(1), { timeout: 20_000 });
    await discord.voice(reading.guild).untilSilent({ quietMs: 800, timeoutMs: 30_000 });
    expect(asked('Posted while every shard was away.')).toBe(1);

    process.kill(-(second.child.pid as number), 'SIGTERM');
    expect((await second.done).code).toBe(0);
  }, 240_000);

  it('one process (npm start, SQLite) resumes across a restart too', async () => {
    const guild = discord.createGuild({ name: 'One process' });
    const text = guild.addTextChannel('chat');
    const room = guild.addVoiceChannel('Room');
    const member = guild.addMember({ name: 'Solo member' });
    guild.joinVoice(member, room);
    const env = {
      ...heraldEnv(discord, tts, join(dir, 'one.sqlite')),
      NODE_EXTRA_CA_CERTS: caPath,
      LOG_LEVEL: 'info',
    };
    const first = run(ONE, [], env, undefined, { group: true });
    groups.push(first);
    await first.until(/"msg":"logged in"/, 60_000);
    await discord.slash(
      member,
      'speak',
      { text: 'Said before the restart of the one process.' },
      { channel: text },
    );
    await discord.voice(guild).untilFrames(5, { timeoutMs: 20_000 });
    const before = discord.gatewayCounts(0);
    process.kill(-(first.child.pid as number), 'SIGTERM');
    expect((await first.done).code).toBe(0);

    const second = run(ONE, [], env, undefined, { group: true });
    groups.push(second);
    await second.until(/"msg":"resumed the gateway session after a restart"/, 60_000);
    expect(discord.gatewayCounts(0)).toEqual({ identifies: before.identifies, resumes: before.resumes + 1 });
    const reply = await discord.slash(
      member,
      'speak',
      { text: 'Said after the resume of the one process.' },
      { channel: text },
    );
    expect(reply.content).toMatch(/^(Speaking now|Queued|Joining your channel)/);
    await vi.waitFor(() => expect(asked('Said after the resume of the one process.')).toBe(1), {
      timeout: 15_000,
    });
    process.kill(-(second.child.pid as number), 'SIGTERM');
    expect((await second.done).code).toBe(0);
  }, 120_000);
});
