import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PermissionFlagsBits } from 'discord.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import {
  type Channel,
  type DiscordEmulator,
  type Guild,
  type Member,
  type Reply,
  shardOf,
  startDiscordEmulator,
} from '../../emulators/discord/index.ts';
import { trustedTestCertificate } from '../../emulators/discord/tls.ts';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { defaultShardProcesses } from '../../src/shard/config.ts';
import { machineShape } from '../../src/shard/machine.ts';
import { SHARD_EXEC_ARGV } from '../../src/shard/node-flags.ts';
import { createDatabase } from '../support/postgres.ts';
import { linesOf, run, type Spawned } from '../support/process.ts';
import { heraldEnv } from './harness.ts';

// `npm run start:shards` end to end: the sharding manager and its shard processes (real child processes of
// src/shard/main.ts), 40 servers, one PostgreSQL shared by every process, both emulators as the ground truth.

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'shard', 'main.ts');
const INDEX = join(import.meta.dirname, '..', '..', 'src', 'index.ts');
const TEN = 'abcdefghij'; // $0.01 at $0.001 a character
const FLOOR_SENTENCE =
  /below the floor the operator set|reached the floor the operator set|Herald has stopped speaking/;
const ACCEPTED = /^(Speaking now|Queued at position|Joining your channel)/;
const cluster = inject('postgres');

interface Server {
  readonly guild: Guild;
  readonly text: Channel;
  readonly room: Channel;
  readonly admin: Member;
  readonly members: Member[];
}

let discord: DiscordEmulator;
let tts: TtsEmulator;
let dir: string;
let caPath: string;
const servers: Server[] = [];
const groups: Spawned[] = [];

/** What an operator sets for the most voices one machine holds (`npm start` runs one process without it). */
const AUTO = { SHARD_PROCESSES: 'auto' } as const;
const describePg = 'url' in cluster ? describe : describe.skip;
if ('skipped' in cluster) {
  describe.skip(`sharded Herald on PostgreSQL — skipped: ${cluster.skipped}`, () => {
    it('runs 4 shard processes on one PostgreSQL', () => {});
  });
}

beforeAll(async () => {
  if (!('url' in cluster)) return;
  [discord, tts] = await Promise.all([
    // Many identify buckets: the manager then starts a shard every 344 ms rather than every 5.5 s.
    startDiscordEmulator({ maxConcurrency: 16 }),
    startTtsEmulator({ speed: 8, pricePerCharUsd: 0.001, msPerChar: 5 }),
  ]);
  dir = mkdtempSync(join(tmpdir(), 'herald-shards-'));
  caPath = join(dir, 'ca.pem');
  writeFileSync(caPath, (await trustedTestCertificate()).cert);
  for (let i = 0; i < 40; i += 1) {
    const guild = discord.createGuild({ name: `Server ${i}` });
    const text = guild.addTextChannel('chat');
    const room = guild.addVoiceChannel('Room');
    const admin = guild.addMember({ name: `Admin ${i}`, permissions: PermissionFlagsBits.ManageGuild });
    const members = [guild.addMember({ name: `Ann ${i}` }), guild.addMember({ name: `Ben ${i}` })];
    for (const member of members) guild.joinVoice(member, room);
    servers.push({ guild, text, room, admin, members });
  }
});

afterAll(async () => {
  for (const group of groups) if (group.child.exitCode === null) group.child.kill('SIGKILL');
  await Promise.all([discord?.close(), tts?.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Starts `npm run start:shards` (as its script; or `script`) and resolves once every shard is ready. */
async function startGroup(databaseUrl: string, env: Record<string, string>, script = MAIN): Promise<Spawned> {
  const group = spawnGroup(databaseUrl, env, script);
  await group.until(/"msg":"every shard is ready"/, 120_000);
  await discord.untilReady();
  return group;
}

/** Starts `npm run start:shards` (or `script`) without waiting for it. */
function spawnGroup(databaseUrl: string, env: Record<string, string>, script = MAIN): Spawned {
  const group = run(script, [], {
    ...heraldEnv(discord, tts, join(dir, 'unused.sqlite')),
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '4',
    NODE_EXTRA_CA_CERTS: caPath,
    LOG_LEVEL: 'info',
    BUDGET_PRICE_PER_CHAR_USD: '0.001',
    ...env,
  });
  groups.push(group);
  return group;
}

async function stopGroup(group: Spawned): Promise<void> {
  group.child.kill('SIGTERM');
  const { code } = await group.done;
  expect(code).toBe(0);
}

/** The pid of a shard's current process, from the manager's log. */
const pidOf = (group: Spawned, shard: number): number | undefined =>
  linesOf(group)
    .filter((l) => l.msg === 'shard process started' && l.shard === shard)
    .map((l) => l.shardPid as number)
    .at(-1);

/** The flags a running process's Node was started with, before its script (from /proc). */
const nodeFlagsOf = (pid: number): string[] => {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const script = args.findIndex((arg) => arg.endsWith('.ts') || arg.endsWith('.js'));
  return args.slice(1, script);
};

/** The ledger as the database (PostgreSQL, or a `sqlite:` file) holds it: each charged row's request id and cost. */
async function ledgerOf(
  url: string,
): Promise<{ requestId: string | null; costNanos: number; guildId: string }[]> {
  if (url.startsWith('sqlite:')) {
    const db = new DatabaseSync(url.slice('sqlite:'.length), { readOnly: true });
    try {
      const rows = db
        .prepare('SELECT request_id, cost_nanos, guild_id FROM budget_ledger WHERE cost_nanos IS NOT NULL')
        .all() as { request_id: string | null; cost_nanos: number; guild_id: string }[];
      return rows.map((r) => ({ requestId: r.request_id, costNanos: r.cost_nanos, guildId: r.guild_id }));
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ request_id: string | null; cost_nanos: string; guild_id: string }>(
      'SELECT request_id, cost_nanos, guild_id FROM budget_ledger WHERE cost_nanos IS NOT NULL',
    );
    return rows.map((r) => ({
      requestId: r.request_id,
      costNanos: Number(r.cost_nanos),
      guildId: r.guild_id,
    }));
  } finally {
    await client.end();
  }
}

const nanos = (usd: number) => Math.round(usd * 1e9);

/**
 * The ledger (a fresh database per test) holds a row for every request the service charged since the test's
 * first request (`since`, an index into its requests), and their sum is what it charged, to the cent.
 */
async function expectLedgerMatchesService(url: string, since: number): Promise<void> {
  await vi.waitFor(
    async () => {
      const charged = tts.requests.slice(since).filter((r) => r.chargedUsd > 0);
      const ledger = await ledgerOf(url);
      const ids = new Set(ledger.map((row) => row.requestId));
      expect(charged.filter((r) => !ids.has(r.requestId)).map((r) => r.requestId)).toEqual([]);
      expect(ledger).toHaveLength(charged.length);
      const ledgerCents = Math.round(ledger.reduce((sum, row) => sum + row.costNanos, 0) / 1e7);
      expect(ledgerCents).toBe(Math.round(charged.reduce((sum, r) => sum + r.chargedUsd, 0) * 100));
    },
    { timeout: 10_000, interval: 200 },
  );
}

/**
 * Both members of every other server (20 servers, over every shard) ask at once, with $0.555 in the account and a
 * $0.50 floor (set by the test): five utterances of $0.01 are paid over every process, never a sixth, and every other
 * member is told why, at once or when due. Returns the counts, for the log. Half the servers, not all: 80 interactions
 * at the first moment of four processes just started, beside CI's other lane on two cores, took up to 2.7 s to answer
 * (before and after the answers-first gate alike), and one now and then missed Discord's three seconds; answering in
 * a rush is measured by the bench (`npm run bench -- --tts=at-once`), not timed here.
 */
async function expectFloorHeldWithEverybodySpeaking(before: number): Promise<string> {
  const replies = await Promise.all(
    servers
      .filter((_, i) => i % 2 === 0)
      .flatMap(({ members, text }) =>
        members.map((member) => discord.slash(member, 'speak', { text: TEN }, { channel: text })),
      ),
  );
  const refusedAtOnce = (): Reply[] => replies.filter((r) => !ACCEPTED.test(r.content));
  const refusedLater = (): Reply[] => replies.filter((r) => r.followUps().length > 0);
  const charged = () => tts.requests.slice(before).filter((r) => r.chargedUsd > 0).length;
  await vi.waitFor(
    () => expect(charged() + refusedAtOnce().length + refusedLater().length).toBe(replies.length),
    { timeout: 30_000, interval: 100 },
  );
  expect(charged()).toBe(5);
  expect(tts.balanceUsd).toBeGreaterThanOrEqual(0.5);
  for (const reply of refusedAtOnce()) expect(reply.content).toMatch(FLOOR_SENTENCE);
  for (const reply of refusedLater()) expect(reply.followUps()[0]?.content).toMatch(FLOOR_SENTENCE);
  return `${charged()} charged, ${refusedAtOnce().length} refused at once, ${refusedLater().length} refused when due; balance $${tts.balanceUsd.toFixed(3)}`;
}

describePg('sharded Herald: 4 shard processes, 40 servers, one PostgreSQL', () => {
  it('spreads the servers over the shards, and holds the floor with everybody speaking at once', async () => {
    const url = await createDatabase((cluster as { url: string }).url);
    tts.balanceUsd = 0.555;
    const before = tts.requests.length;
    const group = await startGroup(url, {
      SHARD_COUNT: '4',
      BUDGET_FLOOR_USD: '0.50',
      METRICS_PORT: '0',
      LOG_LEVEL: 'debug', // every command is logged, with its server
    });
    try {
      expect(
        discord
          .gatewaySessions()
          .map((s) => s.shard)
          .sort(),
      ).toEqual([
        [0, 4],
        [1, 4],
        [2, 4],
        [3, 4],
      ]);
      for (let shard = 0; shard < 4; shard += 1) {
        expect(servers.filter((s) => shardOf(s.guild.id, 4) === shard).length).toBeGreaterThanOrEqual(5);
      }
      console.log(`40 /speak on 4 shards: ${await expectFloorHeldWithEverybodySpeaking(before)}`);
      // Every line a shard process logged about a server names that server's own shard.
      const aboutServers = linesOf(group).filter((l) => typeof l.guild === 'string');
      expect(aboutServers.length).toBeGreaterThan(0);
      expect(aboutServers.filter((l) => String(l.shard) !== String(shardOf(l.guild as string, 4)))).toEqual(
        [],
      );
      await expectLedgerMatchesService(url, before);

      // The manager's one endpoint: every shard's metrics summed, every shard's readiness.
      const endpoint = linesOf(group).find((l) => l.msg === 'ops endpoint listening')?.url as string;
      const metrics = await (await fetch(`${endpoint}/metrics`)).text();
      expect(metrics).toMatch(/^herald_characters_charged_total 50$/m);
      expect(metrics).toMatch(/^herald_gateway_connected 1$/m);
      expect(metrics).toMatch(/^herald_budget_floor_usd 0\.5$/m);
      const ready = await fetch(`${endpoint}/readyz`);
      const body = (await ready.json()) as { ready: boolean; shards: Record<string, { checks: unknown }> };
      // $0.505 is above the floor (the sixth utterance was refused, not paid): every shard is ready, and says so.
      expect(ready.status).toBe(200);
      expect(body.ready).toBe(true);
      expect(Object.keys(body.shards)).toEqual(['0', '1', '2', '3']);
      for (const shard of Object.values(body.shards)) {
        expect(shard.checks).toMatchObject({
          gateway: { ok: true },
          database: { ok: true },
          budget: { ok: true },
        });
      }
      const health = (await (await fetch(`${endpoint}/healthz`)).json()) as {
        shards: Record<string, string>;
      };
      expect(health.shards).toEqual({ 0: 'ready', 1: 'ready', 2: 'ready', 3: 'ready' });

      // The manager's status page: the budget and the ledger from PostgreSQL, the rest from every shard.
      const page = await (await fetch(`${endpoint}/`)).text();
      expect(page).toContain('4 of 4 shards connected');
      for (let shard = 0; shard < 4; shard += 1) {
        expect(page).toContain(`<tr data-shard="${shard}" data-state="answered" data-gateway="connected">`);
      }
      // Each server in voice is listed by the shard that holds it, from more than one shard.
      const sessions = [...page.matchAll(/<tr data-shard="(\d)"><td>(Server \d+)<\/td>/g)].map(
        ([, shard, name]) => ({ shard: Number(shard), name }),
      );
      expect(new Set(sessions.map((s) => s.shard)).size).toBeGreaterThan(1);
      for (const { shard, name } of sessions) {
        const server = servers.find((s) => s.guild.name === name) as Server;
        expect(shardOf(server.guild.id, 4)).toBe(shard);
      }
      expect(page).toContain(`id="balance" data-usd="${tts.balanceUsd}"`);
      expect(page).toContain('data-total-usd="0.05"');
      expect(page).not.toContain(discord.token);
      expect(page).not.toContain(tts.apiKey);

      // A shard frozen (SIGSTOP) cannot answer: the page still comes, saying so, with the other three.
      const frozen = pidOf(group, 2) as number;
      process.kill(frozen, 'SIGSTOP');
      try {
        const response = await fetch(`${endpoint}/`);
        expect(response.status).toBe(200);
        const stalled = await response.text();
        expect(stalled).toMatch(
          /<tr data-shard="2" data-state="silent">.*no answer: shard 2 did not answer within 5000 ms/,
        );
        expect(stalled).toContain('3 of 4 shards connected');
        expect(stalled).toContain('<tr data-shard="3" data-state="answered" data-gateway="connected">');
      } finally {
        process.kill(frozen, 'SIGCONT');
      }
    } finally {
      await stopGroup(group);
    }
  });

  it("holds one server's daily cap set on its own shard while every server speaks", async () => {
    const url = await createDatabase((cluster as { url: string }).url);
    tts.balanceUsd = 10;
    const capped = servers[5] as Server;
    const extra = Array.from({ length: 4 }, (_, i) => capped.guild.addMember({ name: `Extra ${i}` }));
    for (const member of extra) capped.guild.joinVoice(member, capped.room);
    const before = tts.requests.length;
    const group = await startGroup(url, { SHARD_COUNT: '4' });
    try {
      const cap = await discord.slash(capped.admin, 'budget', { usd: 0.02 }, { subcommand: 'cap' });
      expect(cap.content).toMatch(/at most \$0\.02/);
      const speakers = servers.flatMap((s) =>
        s === capped ? [...s.members, ...extra] : s.members.slice(0, 1),
      );
      const replies = await Promise.all(
        speakers.map((member) => {
          const server = servers.find((s) => s.guild.id === member.guildId) as Server;
          return discord.slash(member, 'speak', { text: TEN }, { channel: server.text });
        }),
      );
      const inCapped = replies.filter((_, i) => speakers[i]?.guildId === capped.guild.id);
      const others = replies.filter((_, i) => speakers[i]?.guildId !== capped.guild.id);
      expect(others.every((r) => ACCEPTED.test(r.content))).toBe(true);
      // Six members at once: each is refused at /speak, or queued and refused when its turn comes; two are paid.
      const capSentence = /This server has used its daily speech budget: \$0\.0\d of \$0\.02/;
      const refusedInCapped = () =>
        inCapped.flatMap((r) =>
          ACCEPTED.test(r.content) ? r.followUps().map((f) => f.content) : [r.content],
        );
      const charged = () => tts.requests.slice(before).filter((r) => r.chargedUsd > 0).length;
      await vi.waitFor(
        () => {
          expect(charged()).toBe(others.length + 2);
          expect(refusedInCapped()).toHaveLength(4);
        },
        { timeout: 30_000, interval: 100 },
      );
      for (const refusal of refusedInCapped()) expect(refusal).toMatch(capSentence);
      console.log(
        `daily cap $0.02 on ${capped.guild.name} (shard ${shardOf(capped.guild.id, 4)}): 2 of 6 spoken, ${others.length} other servers all spoken`,
      );
      await expectLedgerMatchesService(url, before);
      const cappedNanos = (await ledgerOf(url))
        .filter((row) => row.guildId === capped.guild.id)
        .reduce((sum, row) => sum + row.costNanos, 0);
      expect(cappedNanos).toBe(nanos(0.02));
    } finally {
      // The extra members stay seated: members leaving a call while the bot is away leave the emulator's DAVE
      // group in a state where the next join never gets its first frame out (seen once; not a sharding matter).
      await stopGroup(group);
    }
  });

  it('brings a shard killed with -9 mid-utterance back within 15 s, while the others keep speaking', async () => {
    const url = await createDatabase((cluster as { url: string }).url);
    tts.balanceUsd = 10;
    const before = tts.requests.length;
    // At debug level a failure below can say what each survivor's shard did about it.
    const group = await startGroup(url, { SHARD_COUNT: '4', LOG_LEVEL: 'debug' });
    try {
      const victimShard = 1;
      const onShard = (shard: number) => servers.filter((s) => shardOf(s.guild.id, 4) === shard);
      // Three servers per shard speak three seconds each.
      const speaking = [0, 1, 2, 3].flatMap((shard) => onShard(shard).slice(0, 3));
      const long = 'the quick brown fox jumps over the lazy dog '.repeat(14);
      for (const server of speaking) discord.voice(server.guild).clear();
      const replies = await Promise.all(
        speaking.map((s) =>
          discord.slash(s.members[0] as Member, 'speak', { text: long }, { channel: s.text }),
        ),
      );
      expect(replies.every((r) => ACCEPTED.test(r.content))).toBe(true);
      const victims = speaking.filter((s) => shardOf(s.guild.id, 4) === victimShard);
      const survivors = speaking.filter((s) => shardOf(s.guild.id, 4) !== victimShard);
      await discord.voice((victims[0] as Server).guild).untilFrames(25, { timeoutMs: 15_000 });
      const pid = pidOf(group, victimShard);
      const identifiesBefore = discord.identifies.length;
      const killedAt = Date.now();
      const killedAtPerf = performance.now();
      process.kill(pid as number, 'SIGKILL');

      // A server of the killed shard answers /speak again within 15 s.
      const probe = victims[0] as Server;
      let answered: Reply | undefined;
      while (!answered && Date.now() - killedAt < 15_000) {
        answered = await discord
          .slash(
            probe.members[1] as Member,
            'speak',
            { text: 'back again' },
            { channel: probe.text, timeoutMs: 1500 },
          )
          .catch(() => undefined);
      }
      const backAfterMs = Date.now() - killedAt;
      expect(answered?.content).toMatch(ACCEPTED);
      expect(backAfterMs).toBeLessThan(15_000);
      expect(pidOf(group, victimShard)).not.toBe(pid);
      // The respawned process runs with the shard processes' Node flags, as the first one did.
      for (const shardPid of [pidOf(group, victimShard), pidOf(group, (victimShard + 1) % 4)]) {
        expect(nodeFlagsOf(shardPid as number)).toEqual(expect.arrayContaining([...SHARD_EXEC_ARGV]));
      }
      // Its other servers rejoin their voice channels by themselves (the sessions saved in PostgreSQL).
      for (const server of victims.slice(1)) {
        await vi.waitFor(
          () =>
            expect(
              discord.voiceRequests.some(
                (r) =>
                  r.guildId === server.guild.id &&
                  r.channelId === server.room.id &&
                  r.granted &&
                  r.at > killedAt,
              ),
            ).toBe(true),
          { timeout: 15_000, interval: 100 },
        );
      }
      // The other shards never stopped: no new session for them, and their servers spoke on through the kill.
      const newIdentifies = discord.identifies.slice(identifiesBefore).map((i) => i.shard?.[0]);
      expect(newIdentifies).toEqual([victimShard]);
      for (const server of survivors) {
        const capture = discord.voice(server.guild);
        const heard = await capture.untilSilent({ quietMs: 500, timeoutMs: 30_000 }).catch((error: Error) => {
          // What the survivor's capture holds, for a failure in CI that does not reproduce on an idle machine.
          const sound = capture.frames.filter((f) => !f.silence);
          const last = capture.frames.at(-1);
          throw new Error(
            `${error.message}; survivor ${server.guild.id} on shard ${shardOf(server.guild.id, 4)}: ` +
              `reply "${replies[speaking.indexOf(server)]?.content}", follow-ups ${JSON.stringify(replies[speaking.indexOf(server)]?.followUps().map((f) => f.content))}, connected ${capture.connected}, ` +
              `${capture.frames.length} frames (${sound.length} sound), last at ${last ? Math.round(last.receivedAt - killedAtPerf) : '-'} ms after the kill; ` +
              `voice requests ${JSON.stringify(discord.voiceRequests.filter((r) => r.guildId === server.guild.id))}; ` +
              `its log: ${linesOf(group)
                .filter((l) => l.guild === server.guild.id)
                .map((l) => JSON.stringify(l))
                .join(' | ')}`,
          );
        });
        expect(capture.frames.some((frame) => frame.receivedAt > killedAtPerf)).toBe(true);
        // 616 characters at 5 ms each: about 3.1 s, 154 frames of 20 ms.
        expect(heard.frames.length).toBeGreaterThan(140);
      }
      console.log(
        `kill -9 of shard ${victimShard}: /speak answered again after ${backAfterMs} ms; ${survivors.length} servers on other shards spoke through`,
      );
      await expectLedgerMatchesService(url, before);
    } finally {
      await stopGroup(group);
    }
  });

  it('uses settings written on 2 shards at once after resharding to 4, on the same PostgreSQL', async () => {
    const url = await createDatabase((cluster as { url: string }).url);
    tts.balanceUsd = 10;
    // A server whose shard changes process: shard 0 or 1 of 2, shard 2 or 3 of 4.
    const server = servers.find((s) => shardOf(s.guild.id, 4) >= 2) as Server;
    const adam = tts.speakers.find((s) => s.name === 'Adam');
    const two = await startGroup(url, { SHARD_COUNT: '2' });
    try {
      expect(
        (await discord.slash(server.admin, 'voice-set', { speaker: 'Adam', scope: 'server' })).content,
      ).toMatch(/Adam/);
      const autoread = await discord.slash(
        server.admin,
        'autoread',
        { channel: server.text, enabled: true },
        { subcommand: 'channel' },
      );
      expect(autoread.content).toMatch(/read/i);
    } finally {
      await stopGroup(two);
    }
    const four = await startGroup(url, { SHARD_COUNT: '4' });
    try {
      expect(discord.gatewaySessions().every((s) => s.shard[1] === 4)).toBe(true);
      const member = server.members[0] as Member;
      const spoken = await discord.slash(member, 'speak', { text: 'resharded' }, { channel: server.text });
      expect(spoken.content).toMatch(/as Adam/);
      const marker = `auto read after resharding ${Date.now()}`;
      discord.sendMessage(member, server.text, marker);
      await vi.waitFor(
        () => {
          const request = tts.requests.find((r) => (JSON.stringify(r.body) ?? '').includes(marker));
          expect((request?.body as { speaker_id?: string } | undefined)?.speaker_id).toBe(adam?.id);
        },
        { timeout: 15_000, interval: 100 },
      );
    } finally {
      await stopGroup(four);
    }
  });

  it('stands a second manager on the same shards by, saying so on its endpoint, and starts them when the first stops', async () => {
    const url = await createDatabase((cluster as { url: string }).url);
    tts.balanceUsd = 10;
    const first = await startGroup(url, { SHARD_COUNT: '2' });
    const sessions = discord.gatewaySessions().length;
    const second = spawnGroup(url, { SHARD_COUNT: '2', METRICS_PORT: '0' });
    try {
      await second.until(/"msg":"shard stands by: another Herald runs it"/, 60_000);
      const endpoint = linesOf(second).find((l) => l.msg === 'ops endpoint listening')?.url as string;
      const health = (await (await fetch(`${endpoint}/healthz`)).json()) as { shards: unknown };
      // Shard 1 starts after shard 0, which waits for the first manager's.
      expect(health.shards).toEqual({ 0: 'standing by', 1: 'down' });
      const readiness = await fetch(`${endpoint}/readyz`);
      expect(readiness.status).toBe(503);
      expect(((await readiness.json()) as { shards: Record<string, unknown> }).shards['0']).toEqual({
        ready: false,
        standingBy: true,
        detail: expect.stringContaining(`shard 0 of 2 on ${hostname()}, pid ${pidOf(first, 0)}`),
      });
      expect(await (await fetch(`${endpoint}/`)).text()).toContain(
        '<tr data-shard="0" data-state="standing-by">',
      );
      // Standing by is neither a second session nor a second answer.
      expect(discord.gatewaySessions()).toHaveLength(sessions);
      expect(second.output()).not.toContain('"msg":"every shard is ready"');

      await stopGroup(first);
      await second.until(/"msg":"every shard is ready"/, 120_000);
      expect(linesOf(second).filter((l) => l.msg === 'shard no longer stands by: it runs now')).toHaveLength(
        1,
      );
      expect((await fetch(`${endpoint}/readyz`)).status).toBe(200);
      await discord.untilReady();
      const server = servers[0] as Server;
      const reply = await discord.slash(
        server.members[0] as Member,
        'speak',
        { text: TEN },
        { channel: server.text },
      );
      expect(reply.content).toMatch(ACCEPTED);
    } finally {
      await stopGroup(second);
    }
  });

  it('pays once for one sentence asked in 10 servers spread over 4 shards at the same moment; the metrics count it once', async () => {
    const url = await createDatabase((cluster as { url: string }).url);
    tts.balanceUsd = 10;
    const cacheDir = join(dir, 'one-cache-for-the-machine');
    // A folder an older Herald kept for a shard process: adopted, not left an orphan.
    mkdirSync(join(cacheDir, 'shard-2'), { recursive: true });
    const group = await startGroup(url, {
      SHARD_COUNT: '4',
      METRICS_PORT: '0',
      AUDIO_CACHE_MB: '8',
      AUDIO_CACHE_DIR: cacheDir,
    });
    try {
      const sentence = 'One sentence, ten servers, four shards.';
      const paidFor = () =>
        tts.requests.filter(
          (r) => (r.body as { text?: string } | undefined)?.text === sentence && r.chargedUsd > 0,
        );
      // Ten servers, round robin over the shards, so every shard process asks.
      const byShard = [0, 1, 2, 3].map((shard) => servers.filter((s) => shardOf(s.guild.id, 4) === shard));
      const ten = Array.from({ length: 10 }, (_, i) => byShard[i % 4]?.[Math.floor(i / 4)]).filter(
        (server): server is Server => server !== undefined,
      );
      expect(new Set(ten.map((s) => shardOf(s.guild.id, 4))).size).toBe(4);
      expect(ten).toHaveLength(10);
      for (const server of ten) discord.voice(server.guild).clear();
      const replies = await Promise.all(
        ten.map((s) =>
          discord.slash(s.members[0] as Member, 'speak', { text: sentence }, { channel: s.text }),
        ),
      );
      expect(replies.map((r) => r.content)).toEqual(replies.map(() => expect.stringMatching(ACCEPTED)));
      const heard = await Promise.all(
        ten.map((s) => discord.voice(s.guild).untilSilent({ timeoutMs: 30_000 })),
      );
      expect(heard.every((h) => h.segments.length >= 1 && h.soundMs > 0)).toBe(true);
      expect(paidFor()).toHaveLength(1);

      await vi.waitFor(
        () => expect(readdirSync(cacheDir).filter((n) => n.endsWith('.hac'))).toHaveLength(1),
        {
          timeout: 10_000,
          interval: 100,
        },
      );
      expect(readdirSync(cacheDir).filter((name) => name.startsWith('shard-'))).toEqual([]);
      const endpoint = linesOf(group).find((l) => l.msg === 'ops endpoint listening')?.url as string;
      await vi.waitFor(
        async () => {
          const metrics = await (await fetch(`${endpoint}/metrics`)).text();
          expect(metrics).toMatch(/^herald_audio_cache_entries 1$/m);
        },
        { timeout: 10_000, interval: 200 },
      );
      const metrics = await (await fetch(`${endpoint}/metrics`)).text();
      const fileBytes = readdirSync(cacheDir)
        .filter((n) => n.endsWith('.hac'))
        .reduce((sum, n) => sum + statSync(join(cacheDir, n)).size, 0);
      expect(metrics).toMatch(new RegExp(`^herald_audio_cache_bytes ${fileBytes}$`, 'm'));
    } finally {
      await stopGroup(group);
    }
  });

  it.skipIf(defaultShardProcesses(AUTO, machineShape()) === undefined)(
    'npm start with SHARD_PROCESSES=auto runs twice the cores (as the memory holds) as shard processes, and each one speaks',
    async () => {
      const url = await createDatabase((cluster as { url: string }).url);
      tts.balanceUsd = 10;
      // heraldEnv pins one process; an operator who wants the most voices this machine holds sets SHARD_PROCESSES=auto.
      const cacheDir = join(dir, 'cache-of-npm-start');
      const group = await startGroup(
        url,
        { ...AUTO, SHARD_COUNT: '', AUDIO_CACHE_MB: '8', AUDIO_CACHE_DIR: cacheDir },
        INDEX,
      );
      try {
        const count = defaultShardProcesses(AUTO, machineShape()) ?? 1;
        expect(discord.gatewaySessions().map((s) => s.shard)).toEqual(
          expect.arrayContaining(Array.from({ length: count }, (_, id) => [id, count])),
        );
        expect(discord.gatewaySessions()).toHaveLength(count);
        expect(
          new Set(linesOf(group).flatMap((l) => (l.msg === 'shard process started' ? [l.shardPid] : [])))
            .size,
        ).toBe(count);
        // A server of each shard is answered and heard.
        const speaking = Array.from({ length: count }, (_, shard) =>
          servers.find((s) => shardOf(s.guild.id, count) === shard),
        ).filter((server): server is Server => server !== undefined);
        for (const server of speaking) discord.voice(server.guild).clear();
        const replies = await Promise.all(
          speaking.map((s) =>
            discord.slash(s.members[0] as Member, 'speak', { text: TEN }, { channel: s.text }),
          ),
        );
        expect(replies.map((r) => r.content)).toEqual(replies.map(() => expect.stringMatching(ACCEPTED)));
        for (const server of speaking) {
          const heard = await discord.voice(server.guild).untilSilent({ timeoutMs: 20_000 });
          expect(heard.segments).toHaveLength(1);
        }
        // Every shard keeps its audio in the machine's one folder: the sentence every shard was asked is there once.
        await vi.waitFor(
          () => expect(readdirSync(cacheDir).filter((n) => n.endsWith('.hac'))).toHaveLength(1),
          {
            timeout: 10_000,
            interval: 100,
          },
        );
        expect(readdirSync(cacheDir).filter((name) => name.startsWith('shard-'))).toEqual([]);
      } finally {
        await stopGroup(group);
      }
    },
  );
  it.skipIf(defaultShardProcesses(AUTO, machineShape()) === undefined)(
    'npm start with SHARD_PROCESSES=auto on SQLite: shard processes on one fresh file hold one floor, and the ledger is the service’s charges',
    async () => {
      const url = `sqlite:${join(dir, 'npm-start', 'herald.sqlite')}`;
      tts.balanceUsd = 0.555;
      const before = tts.requests.length;
      // A fresh file: every shard process migrates it at the same moment.
      const group = await startGroup(url, { ...AUTO, SHARD_COUNT: '', BUDGET_FLOOR_USD: '0.50' }, INDEX);
      try {
        const count = defaultShardProcesses(AUTO, machineShape()) ?? 1;
        expect(discord.gatewaySessions()).toHaveLength(count);
        await expectFloorHeldWithEverybodySpeaking(before);
        await expectLedgerMatchesService(url, before);
        expect(linesOf(group).filter((l) => l.level === 'error')).toEqual([]);
      } finally {
        await stopGroup(group);
      }
    },
  );
});
