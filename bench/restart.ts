/**
 * `npm run bench:restart [-- --shards=4] [--only=one|shards] [--from=bundle|source|both] [--runs=1]`: figure P7, restart →
 * voice, side by side for the default start (one process) and shard processes (`npm run start:shards`,
 * SHARD_COUNT=4), as an operator lives it: from the bundle `npm start` runs (dist/, built first when stale), or from
 * the sources as the tests run them, or both in one run; `--runs` repeats the whole set, every run in one result file.
 * Three servers, each on a different shard of four (Discord's `(guild_id >> 22) % 4`), each with a member in voice
 * and a queue of three sentences; while they speak, Herald is stopped — a planned restart (SIGTERM, then start),
 * then a crash (`kill -9` of the process or the manager, then start) — and the bench times, for each server, how
 * long until Herald is back in its voice channel and until its queue goes on (the first voice frame after the
 * start), and how much of that was the stop (a planned one plays out what is paid) and the new start. Also the idle
 * memory of each footing, its start → ready, and the IDENTIFYs and RESUMEs the restart sent: a planned stop keeps
 * each shard's session (docs/gateway-sessions.md), so a planned restart should RESUME every shard and IDENTIFY none.
 * (`kill -9` of the manager stops its shards as planned: they follow it when its IPC channel closes.) The emulated
 * Discord allows one IDENTIFY per 5 s (`max_concurrency` 1, as for most bots). Prints a table, writes
 * bench/results/restart-<date>-<commit>.json.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DiscordEmulator, shardOf, startDiscordEmulator } from '../emulators/discord/index.ts';
import { trustedTestCertificate } from '../emulators/discord/tls.ts';
import { startTtsEmulator } from '../emulators/tts/index.ts';
import { DIST, ensureBundle } from '../scripts/build.ts';
import { heraldEnv } from '../test/e2e/harness.ts';
import { round, type Server, settle, sleep, utteranceOf } from './common.ts';
import { type HeraldProcess, startHeraldProcess } from './herald-process.ts';
import { machineOf, writeResult } from './result-file.ts';

const SHARDS = Number(
  /^--shards=(\d+)$/.exec(process.argv.find((a) => a.startsWith('--shards=')) ?? '')?.[1] ?? 4,
);
const ONLY = /^--only=(one|shards)$/.exec(process.argv.find((a) => a.startsWith('--only=')) ?? '')?.[1];
const RUNS = Number(/^--runs=(\d+)$/.exec(process.argv.find((a) => a.startsWith('--runs=')) ?? '')?.[1] ?? 1);
const FROM =
  /^--from=(bundle|source|both)$/.exec(process.argv.find((a) => a.startsWith('--from=')) ?? '')?.[1] ??
  'bundle';

/** One footing's figures. */
interface Footing {
  /** Which of the `--runs` it is, from 1. */
  readonly run: number;
  readonly footing: string;
  readonly processes: number;
  /** What ran: the bundle `npm start` runs, or the sources. */
  readonly from: 'bundle' | 'source';
  readonly idleRssMb: number;
  readonly startToReadyMs: number;
  readonly restarts: Record<'sigterm' | 'kill9', Restart>;
}

interface Restart {
  /** Per server: stop → Herald back in its voice channel, and stop → its queue's first frame, in ms. */
  readonly backInVoiceMs: number[];
  readonly queueGoesOnMs: number[];
  /** How long the stop took (a planned one plays out what is paid, at most 5 s), in ms. */
  readonly stopMs: number;
  /** Per server: the new start → Herald back in its voice channel, in ms (the restart without the stop). */
  readonly startToVoiceMs: number[];
  /** What the start sent Discord's gateway, summed over the shards: IDENTIFYs (each one paced 5 s apart) and RESUMEs. */
  readonly identifies: number;
  readonly resumes: number;
}

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  const footings: Footing[] = [];
  const froms: readonly ('bundle' | 'source')[] =
    FROM === 'both' ? ['bundle', 'source'] : [FROM === 'source' ? 'source' : 'bundle'];
  if (froms.includes('bundle')) await ensureBundle();
  for (let run = 1; run <= RUNS; run++) {
    for (const footing of ONLY ? [ONLY] : ['one', 'shards']) {
      for (const from of froms) footings.push(await measure(run, footing === 'shards' ? SHARDS : 1, from));
    }
  }
  const machine = machineOf();
  const file = writeResult('restart', startedAt, machine, { figure: 'P7 restart → voice', footings });
  const ms = (values: readonly number[]) => `${values.map((v) => (v / 1000).toFixed(1)).join(' / ')} s`;
  console.log('\nP7 restart → voice (three servers on three shards of four, each mid-queue)');
  for (const f of footings) {
    console.log(
      `${RUNS > 1 ? `run ${f.run}, ` : ''}${f.footing}: idle ${f.idleRssMb} MB, start → ready ${(f.startToReadyMs / 1000).toFixed(1)} s`,
    );
    for (const [kind, r] of Object.entries(f.restarts)) {
      console.log(
        `  ${kind.padEnd(7)} back in voice ${ms(r.backInVoiceMs)}; queue goes on ${ms(r.queueGoesOnMs)}; ${r.identifies} IDENTIFY, ${r.resumes} RESUME (stop ${ms([r.stopMs])}, start → voice ${ms(r.startToVoiceMs)})`,
      );
    }
  }
  console.log(`\nwrote ${file}`);
}

async function measure(run: number, processes: number, from: 'bundle' | 'source'): Promise<Footing> {
  const footing = `${processes === 1 ? 'one process (npm start)' : `${processes} shard processes`}, from the ${from === 'bundle' ? 'bundle' : 'sources'}`;
  console.log(`— ${footing}`);
  // Real time: a queue of three sentences of 3 s is still being said when Herald stops.
  const [discord, tts] = await Promise.all([
    startDiscordEmulator({ maxConcurrency: 1 }),
    startTtsEmulator({ speed: 1 }),
  ]);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-restart-'));
  const caPath = join(dataDir, 'ca.pem');
  writeFileSync(caPath, (await trustedTestCertificate()).cert);
  const servers = serversOnShards(discord, 3, SHARDS);
  const env = {
    ...heraldEnv(discord, tts, join(dataDir, 'herald.sqlite')),
    LOG_LEVEL: 'warn',
    NODE_EXTRA_CA_CERTS: caPath,
    ...(processes === 1 ? { SHARD_COUNT: '' } : { SHARD_COUNT: String(processes) }),
  };
  const start = (): HeraldProcess =>
    startHeraldProcess(env, [], dataDir, {
      entry: processes === 1 ? 'index' : 'shards',
      ...(from === 'bundle' ? { bundle: DIST } : {}),
    });
  let herald: HeraldProcess | undefined;
  try {
    const startedAt = performance.now();
    herald = start();
    await herald.untilReady(untilSessions(discord, processes));
    const startToReadyMs = performance.now() - startedAt;
    await settle();
    await sleep(1_000);
    const idleRssMb = round(herald.rssMb(), 0);
    const restarts = {} as Record<'sigterm' | 'kill9', Restart>;
    for (const kind of ['sigterm', 'kill9'] as const) {
      await queueEverywhere(discord, servers);
      const before = gatewayTotals(discord);
      const stoppedAt = performance.now();
      if (kind === 'sigterm') await herald.stop();
      else {
        herald.child.kill('SIGKILL');
        // The shard processes follow their manager (its IPC channel closes).
        await untilGone(discord, servers);
      }
      for (const s of servers) discord.voice(s.guild).clear();
      const restartedAt = performance.now();
      herald = start();
      const [backInVoiceMs, queueGoesOnMs] = await Promise.all([
        Promise.all(servers.map((s) => untilInVoice(discord, s, stoppedAt))),
        Promise.all(
          servers.map((s) =>
            discord
              .voice(s.guild)
              .untilFrames(1, { timeoutMs: 90_000 })
              .then(() => performance.now() - stoppedAt),
          ),
        ),
      ]);
      restarts[kind] = {
        backInVoiceMs: backInVoiceMs.map((v) => round(v, 0)),
        queueGoesOnMs: queueGoesOnMs.map((v) => round(v, 0)),
        stopMs: round(restartedAt - stoppedAt, 0),
        startToVoiceMs: backInVoiceMs.map((v) => round(v - (restartedAt - stoppedAt), 0)),
        identifies: gatewayTotals(discord).identifies - before.identifies,
        resumes: gatewayTotals(discord).resumes - before.resumes,
      };
      console.log(`  ${kind}: ${JSON.stringify(restarts[kind])}`);
    }
    return { run, footing, processes, from, idleRssMb, startToReadyMs: round(startToReadyMs, 0), restarts };
  } finally {
    await herald?.stop();
    await Promise.all([discord.close(), tts.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** `count` servers on the first `count` shards of `shards`, each with a member in voice. */
function serversOnShards(discord: DiscordEmulator, count: number, shards: number): Server[] {
  const servers: Server[] = [];
  for (let i = 0; servers.length < count; i++) {
    const guild = discord.createGuild({ name: `Restart ${i}` });
    const text = guild.addTextChannel('general');
    if (shardOf(guild.id, shards) !== servers.length) continue;
    const voice = guild.addVoiceChannel('Lounge');
    const member = guild.addMember({ name: `Member ${i}` });
    guild.joinVoice(member, voice);
    servers.push({ guild, text, voice, member });
  }
  return servers;
}

/** Three sentences of 3 s queued in each server; resolves once each is heard. */
async function queueEverywhere(discord: DiscordEmulator, servers: readonly Server[]): Promise<void> {
  await Promise.all(
    servers.map(async (s) => {
      discord.voice(s.guild).clear();
      for (let i = 0; i < 3; i++)
        await discord.slash(s.member, 'speak', { text: utteranceOf(3) }, { channel: s.text });
      await discord.voice(s.guild).untilFrames(10, { timeoutMs: 60_000 });
    }),
  );
}

function gatewayTotals(discord: DiscordEmulator): { identifies: number; resumes: number } {
  const counts = Array.from({ length: SHARDS }, (_, id) => discord.gatewayCounts(id));
  return {
    identifies: counts.reduce((sum, c) => sum + c.identifies, 0),
    resumes: counts.reduce((sum, c) => sum + c.resumes, 0),
  };
}

async function untilSessions(discord: DiscordEmulator, count: number): Promise<void> {
  while (discord.gatewaySessions().filter((s) => s.ready && s.connected).length < count) await sleep(50);
}

async function untilGone(discord: DiscordEmulator, servers: readonly Server[]): Promise<void> {
  const deadline = performance.now() + 15_000;
  while (performance.now() < deadline) {
    if (discord.gatewaySessions().every((s) => !s.connected)) return;
    await sleep(50);
  }
  void servers;
}

/** Stop → Herald back in the server's voice channel (its voice state there, as the emulator knows it), in ms. */
async function untilInVoice(discord: DiscordEmulator, server: Server, since: number): Promise<number> {
  const deadline = performance.now() + 90_000;
  // It leaves on the stop (or is dropped on a kill) first; then it comes back.
  while (performance.now() < deadline && discord.voice(server.guild).connected) await sleep(20);
  while (performance.now() < deadline) {
    if (discord.voice(server.guild).connected) return performance.now() - since;
    await sleep(20);
  }
  throw new Error(`Herald did not come back to ${server.guild.name}'s voice channel within 90 s`);
}

await main();
