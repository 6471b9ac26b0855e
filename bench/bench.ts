/**
 * Herald's benchmark, measured from outside as an operator would see it: both emulators run in this process,
 * Herald runs as its own process (`node src/index.ts`, as `npm start` with `SHARD_COUNT=1`), and every figure comes from the
 * voice packets the emulated Discord receives, the TTS emulator's charges and Herald's CPU and memory as the
 * kernel reports them (/proc). `bench/main.ts` is the command; the smoke test runs it at tiny scale.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildHeldReader, type DiscordEmulator, startDiscordEmulator } from '../emulators/discord/index.ts';
import { trustedTestCertificate } from '../emulators/discord/tls.ts';
import {
  handleOf,
  startTtsEmulator,
  startTtsEmulatorThread,
  type TtsEmulatorHandle,
} from '../emulators/tts/index.ts';
import { DEFAULT_UTTERANCE_PAUSE_MS } from '../src/config.ts';
import { findJemalloc } from '../src/ops/index.ts';
import { heraldEnv } from '../test/e2e/harness.ts';
import { runBaseline } from './baseline.ts';
import { commitOf, round, type Server, settle, sleep, spread, utteranceOf } from './common.ts';
import { held, medianRun, speakAll, untilQuiet } from './concurrency.ts';
import { type HeraldProcess, startHeraldProcess } from './herald-process.ts';
import {
  type BenchOptions,
  type BenchResult,
  type ConcurrencyStep,
  HERALD_NICE,
  P3_TOLERANCE_MS,
  RECEIVER_NAP_MS,
  RECEIVER_NICE,
  TTS_WRITE_EVERY_MS,
} from './options.ts';
import { referenceFrameUs } from './reference-frame.ts';
import { rushLine, splitLine } from './rush.ts';

/** Runs every figure once and returns them; never throws for a bad figure, only for a broken world. */
export async function runBench(options: BenchOptions): Promise<BenchResult> {
  const log = options.progress ?? (() => {});
  const startedAt = new Date().toISOString();
  const loadAverageAtStart = loadavg().map((value) => round(value, 2));
  const referenceAtStart = referenceFrameUs();
  // Built before anything is measured (a C compile, once per version of its source).
  const reader =
    (options.holdPackets ?? true) && (options.nativeReader ?? true) ? buildHeldReader() : undefined;
  const heldReader = reader && 'path' in reader ? reader.path : undefined;
  const maxWarm = Math.max(...options.servers, 1);
  const dave = options.dave ?? true;
  const [discord, tts] = await Promise.all([
    // Sharded, every shard may identify at once (a large bot's max_concurrency), rather than one per 5.5 s.
    startDiscordEmulator({
      dave,
      ...(options.shards ? { maxConcurrency: 16 } : {}),
      receiverNice: options.receiverNice ?? RECEIVER_NICE,
    }),
    startTts(options.ttsThread ?? true, { speed: 4, maxAudioMs: 60_000, balanceUsd: 1_000_000 }),
  ]);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-'));
  // Servers 0..maxWarm-1 are used warm (P1–P5); the rest are the cold burst of P6.
  const servers: Server[] = [];
  for (let i = 0; i < maxWarm + options.coldServers; i++) servers.push(addServer(discord, i));
  const caPath = join(dataDir, 'ca.pem');
  writeFileSync(caPath, (await trustedTestCertificate()).cert);
  let herald: HeraldProcess | undefined;
  try {
    herald = startHeraldProcess(
      {
        ...heraldEnv(discord, tts, join(dataDir, 'herald.sqlite')),
        LOG_LEVEL: 'warn',
        NODE_EXTRA_CA_CERTS: caPath,
        QUEUE_MAX_PER_SERVER: '50',
        // P4 speaks once every server of a step is in voice; joins go at Discord's gateway rate (90 a minute a shard),
        // so 500 servers on one shard take over five minutes, and the first joined would leave idle before P4 spoke.
        IDLE_TIMEOUT_SECONDS: '3600',
        ...(options.shards ? { SHARD_COUNT: String(options.shards) } : {}),
        ...(options.heraldAllocator === 'jemalloc' ? { LD_PRELOAD: jemallocPath() } : {}),
        ...options.heraldEnv,
      },
      options.heraldNodeFlags ?? [],
      dataDir,
      {
        entry: options.shards ? 'shards' : 'index',
        nice: options.heraldNice ?? HERALD_NICE,
        ...(options.heraldLogFile ? { logFile: options.heraldLogFile } : {}),
      },
    );
    await herald.untilReady(discord.untilReady());
    if (options.shards) await herald.untilReady(untilShardsReady(discord, options.shards));
    await settle();
    const heraldAllocators = herald.allocators();
    const idleRssMb = herald.rssMb();
    log(`Herald up (idle RSS ${idleRssMb.toFixed(0)} MB, ${servers.length} servers known)`);

    const first = servers[0] as Server;
    const latency = await measureLatency(discord, tts, first, options.runs);
    log(`P1/P2 done: warm ${latency.warm.median.toFixed(1)} ms, cold ${latency.cold.median.toFixed(1)} ms`);
    const pauseMs = Number(options.heraldEnv?.UTTERANCE_PAUSE_MS ?? DEFAULT_UTTERANCE_PAUSE_MS);
    const p3 = await measureGaps(discord, tts, first, pauseMs, options.runs);
    log(`P3 done: mean gap ${p3.meanGapMs} ms, ${p3.roundsOff} of ${p3.rounds.length} rounds off the pause`);

    // From here on hundreds of streams at once (P4, then P6): writes batched as a network delivers them.
    await tts.configure({ writeEveryMs: options.ttsWriteEveryMs ?? TTS_WRITE_EVERY_MS });
    const steps: ConcurrencyStep[] = [];
    let inVoice = 1;
    let take = 0;
    const footings = options.p4Nice ?? [options.heraldNice ?? HERALD_NICE];
    if (options.ttsAtOnce) await tts.configure({ speed: Number.POSITIVE_INFINITY });
    for (const n of options.servers) {
      await joinAll(discord, servers.slice(inVoice, n), dave);
      inVoice = Math.max(inVoice, n);
      let anyHeld = false;
      for (const nice of footings) {
        const niceSet = footings.length > 1 ? herald.renice(nice) : herald.nice;
        log(`P4 ${n} servers: in voice, speaking (Herald at nice ${niceSet ?? 0})`);
        const runs: ConcurrencyStep[] = [];
        for (let run = 0; run < Math.max(1, options.repeats ?? 1); run++) {
          runs.push(
            await speakAll(
              discord,
              herald,
              servers.slice(0, n),
              options.audioSeconds,
              idleRssMb,
              options.receiverNapMs ?? RECEIVER_NAP_MS,
              options.speakSpreadMs ?? 0,
              options.holdPackets ?? true,
              heldReader,
              take++,
              tts,
            ),
          );
        }
        const step = { ...medianRun(runs), heraldNice: niceSet ?? 0 };
        steps.push(step);
        anyHeld ||= held(step);
        log(
          `P4 ${n} servers, nice ${step.heraldNice}: ${(step.lateShare * 100).toFixed(2)} % late, ${step.cpuMsPerStreamSecond.toFixed(2)} ms CPU/stream-s (${step.cpuMsPerUtterance ?? 'n/a'} ms per utterance beyond playing), RSS ${step.rssMb.toFixed(0)} MB; ${rushLine(step.rush)}; ${splitLine(step.startSplit)}`,
        );
      }
      if (!anyHeld && !options.allSteps) break;
    }
    // P6 and the baseline as before: paced, at the first footing's priority.
    if (options.ttsAtOnce) await tts.configure({ speed: 4 });
    if (footings.length > 1) herald.renice(footings[0] ?? 0);
    const connectedRssMb = herald.rssMb();
    await leaveAll(discord, servers.slice(0, inVoice));

    const p6 = await coldBurst(discord, tts, servers.slice(maxWarm), options.audioSeconds);
    log(`P6 done: ${p6.heard}/${p6.servers} heard, $${p6.paidUnheardUsd.toFixed(4)} unheard`);
    const baseline = await runBaseline(tts, {
      steps: options.baselineSteps ?? [Math.min(10, maxWarm)],
      audioSeconds: options.audioSeconds,
    });
    log(
      baseline.ran
        ? `baseline done: ${baseline.maxStreamsHeld} streams held`
        : `baseline skipped: ${baseline.reason}`,
    );

    // The most servers held under the first footing (the operator's, when several).
    const ok = steps.filter((step) => held(step) && step.heraldNice === steps[0]?.heraldNice);
    return {
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        memoryGb: round(totalmem() / 2 ** 30, 1),
        node: process.version,
        commit: commitOf(),
        loadAverageAtStart,
        loadAverageAtEnd: loadavg().map((value) => round(value, 2)),
        receiverNice: discord.receiverNice,
        nativeReader: reader === undefined ? 'off' : 'path' in reader ? 'built' : reader.unavailable,
        heraldNice: herald.nice,
        heraldAllocators,
        referenceFrameUs: { atStart: referenceAtStart, atEnd: referenceFrameUs() },
      },
      options: {
        ...options,
        ttsWriteEveryMs: options.ttsWriteEveryMs ?? TTS_WRITE_EVERY_MS,
        receiverNapMs: options.receiverNapMs ?? RECEIVER_NAP_MS,
        holdPackets: options.holdPackets ?? true,
        ttsThread: tts.runsOn === 'thread',
        progress: undefined,
      } as unknown as BenchOptions,
      startedAt,
      p1TtsToFirstPacketMs: latency.ttsToPacket,
      p2SpeakToFirstPacketMs: { cold: latency.cold, warm: latency.warm },
      p3GapsMs: p3,
      p4Concurrency: steps,
      p4MaxServers: Math.max(0, ...ok.map((step) => step.servers)),
      p5Memory: {
        idleRssMb: round(idleRssMb, 1),
        perConnectionKb: round(((connectedRssMb - idleRssMb) * 1024) / inVoice, 1),
        connections: inVoice,
      },
      p6ColdBurst: p6,
      baseline,
    };
  } finally {
    await herald?.stop();
    await Promise.all([discord.close(), tts.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The emulated TTS service, on a thread of its own or on this one (`BenchOptions.ttsThread`). */
async function startTts(
  ownThread: boolean,
  options: Parameters<typeof startTtsEmulator>[0],
): Promise<TtsEmulatorHandle> {
  return ownThread ? startTtsEmulatorThread(options) : handleOf(await startTtsEmulator(options));
}

/** When the capture's first sounding packet arrived (`performance.now()` clock, stamped on arrival). */
function firstSoundAt(capture: ReturnType<DiscordEmulator['voice']>): number {
  return capture.frames.find((frame) => !frame.silence)?.receivedAt ?? Number.NaN;
}

function addServer(discord: DiscordEmulator, i: number): Server {
  const guild = discord.createGuild({ name: `Bench ${i}` });
  const text = guild.addTextChannel('general');
  const voice = guild.addVoiceChannel('Lounge');
  const member = guild.addMember({ name: `Member ${i}` });
  guild.joinVoice(member, voice);
  return { guild, text, voice, member };
}

async function measureLatency(
  discord: DiscordEmulator,
  tts: TtsEmulatorHandle,
  server: Server,
  runs: number,
) {
  const capture = discord.voice(server.guild);
  const cold: number[] = [];
  const warm: number[] = [];
  const ttsToPacket: number[] = [];
  for (let i = 0; i < runs; i++) {
    capture.clear();
    let start = performance.now();
    const reply = discord.slash(server.member, 'speak', { text: `Cold start number ${i}.` });
    await capture.untilFrames(1, { timeoutMs: 30_000 });
    cold.push(firstSoundAt(capture) - start);
    await reply;
    await capture.untilSilent({ quietMs: 300 });

    capture.clear();
    const before = await tts.requestCount();
    start = performance.now();
    await Promise.all([
      discord.slash(server.member, 'speak', { text: `Warm number ${i}.` }),
      capture.untilFrames(1, { timeoutMs: 30_000 }),
    ]);
    // When the packet arrived, not when both waits were over: the interaction's reply may come after it.
    const firstPacket = firstSoundAt(capture);
    warm.push(firstPacket - start);
    const request = (await tts.requests(before)).find(
      (r) => r.path.endsWith('/generate') || r.method === 'POST',
    );
    // The emulator records Date.now(); the same clock through performance.timeOrigin.
    if (request) ttsToPacket.push(performance.timeOrigin + firstPacket - request.receivedAt);
    await capture.untilSilent({ quietMs: 300 });
    await discord.slash(server.member, 'leave');
    await capture.untilDisconnected();
  }
  return { cold: spread(cold), warm: spread(warm), ttsToPacket: spread(ttsToPacket) };
}

/** One Opus frame's length. */
const FRAME_MS = 20;

async function measureGaps(
  discord: DiscordEmulator,
  tts: TtsEmulatorHandle,
  server: Server,
  pauseMs: number,
  rounds: number,
): Promise<BenchResult['p3GapsMs']> {
  const capture = discord.voice(server.guild);
  await tts.configure({ speed: 1 });
  try {
    await discord.slash(server.member, 'join');
    await capture.untilConnected();
    const silences: number[][] = [];
    const means: number[] = [];
    for (let round = 0; round < Math.max(1, rounds); round++) {
      capture.clear();
      for (const text of ['First of three.', 'Second of three.', 'Third of three.']) {
        await discord.slash(server.member, 'speak', { text });
      }
      const heard = await capture.untilSilent({ quietMs: 800, timeoutMs: 60_000 });
      const sounding = capture.frames.filter((frame) => !frame.silence);
      const first = sounding[0]?.receivedAt ?? 0;
      const last = sounding.at(-1)?.receivedAt ?? 0;
      silences.push(heard.gapsMs.map((gap) => round1(gap)));
      if (sounding.length > 0) means.push((last - first + FRAME_MS - sounding.length * FRAME_MS) / 2);
    }
    return {
      configuredPauseMs: pauseMs,
      rounds: silences,
      roundsOff: silences.filter((gaps) => !asConfigured(gaps, pauseMs)).length,
      meanGapMs:
        means.length > 0 ? round1(means.reduce((sum, ms) => sum + ms, 0) / means.length) : Number.NaN,
    };
  } finally {
    await tts.configure({ speed: 4 });
  }
}

/** Three utterances were heard as three: exactly two silences, each within P3's ±20 ms of the configured pause. */
function asConfigured(gaps: readonly number[], pauseMs: number): boolean {
  return gaps.length === 2 && gaps.every((gap) => Math.abs(gap - pauseMs) <= P3_TOLERANCE_MS);
}

const round1 = (ms: number): number => round(ms, 1);

async function joinAll(discord: DiscordEmulator, servers: readonly Server[], dave: boolean): Promise<void> {
  // Joins are paced by Herald (Discord's gateway rate); the bench waits for every connection.
  // An unanswered /join (Herald busy past Discord's 3 s) may still join; a server that never connects is left out.
  await Promise.all(servers.map((server) => discord.slash(server.member, 'join').catch(() => undefined)));
  await Promise.all(
    servers.map((server) =>
      discord
        .voice(server.guild)
        .untilConnected({ timeoutMs: 600_000 })
        .catch(() => undefined),
    ),
  );
  // "Herald already in voice" includes DAVE: every member's client holds the group, and its transition has had
  // time to execute, so the step measures streaming rather than handshakes finishing under the burst.
  const deadline = performance.now() + 120_000;
  while (
    dave &&
    performance.now() < deadline &&
    servers.some((server) => discord.daveListener(server.guild, server.member)?.joinedGroupAt() === undefined)
  ) {
    await sleep(200);
  }
  await sleep(1_000);
}

async function leaveAll(discord: DiscordEmulator, servers: readonly Server[]): Promise<void> {
  await Promise.all(servers.map((server) => discord.slash(server.member, 'leave').catch(() => undefined)));
  await Promise.all(
    servers.map((server) =>
      discord
        .voice(server.guild)
        .untilDisconnected({ timeoutMs: 30_000 })
        .catch(() => undefined),
    ),
  );
}

/** Servers Herald is not in voice with ask at once; who heard, who was told what, what was paid for nothing. */
async function coldBurst(
  discord: DiscordEmulator,
  tts: TtsEmulatorHandle,
  servers: readonly Server[],
  audioSeconds: number,
): Promise<BenchResult['p6ColdBurst']> {
  const text = utteranceOf(audioSeconds);
  const before = await tts.requestCount();
  const start = performance.now();
  const replies = await Promise.all(
    servers.map((server) =>
      discord.slash(server.member, 'speak', { text }, { timeoutMs: 30_000 }).catch(() => undefined),
    ),
  );
  await untilQuiet(discord, servers, 300_000, (server) =>
    discord.channelMessages(server.text).some((message) => /could not connect/i.test(message.content)),
  );
  const heardAt = servers.map((server) => {
    const frames = discord.voice(server.guild).frames;
    const last = frames.at(-1);
    return frames.some((frame) => !frame.silence) && last ? last.receivedAt - start : undefined;
  });
  const charged = (await tts.requests(before)).filter((request) => request.chargedUsd > 0);
  const paidUsd = charged.reduce((sum, request) => sum + request.chargedUsd, 0);
  const heard = heardAt.filter((at) => at !== undefined).length;
  const couldNotConnect = servers.map((server) =>
    discord.channelMessages(server.text).some((message) => /could not connect/i.test(message.content)),
  );
  const initial = replies.map((reply) => reply?.edits.at(-1)?.content ?? reply?.content ?? '');
  const speakingNow = initial.map((content) => /^Speaking now/.test(content));
  const perUtterance = charged.length === 0 ? 0 : paidUsd / charged.length;
  const neither = servers.flatMap((server, i) =>
    heardAt[i] === undefined && !couldNotConnect[i]
      ? [
          {
            server: server.guild.name,
            reply: initial[i] || (replies[i] ? '(no words)' : '(no reply within 30 s)'),
            said: discord.channelMessages(server.text).map((message) => message.content),
          },
        ]
      : [],
  );
  return {
    servers: servers.length,
    heard,
    toldSpeakingNow: speakingNow.filter(Boolean).length,
    toldJoining: initial.filter((content) => /joining your channel/i.test(content)).length,
    toldCouldNotConnect: couldNotConnect.filter(Boolean).length,
    toldSpeakingThenCouldNotConnect: speakingNow.filter((now, i) => now && couldNotConnect[i]).length,
    paidUsd: round(paidUsd, 6),
    paidUnheardUsd: round(Math.max(0, charged.length - heard) * perUtterance, 6),
    lastHeardAfterMs: round(Math.max(0, ...heardAt.map((at) => at ?? 0)), 0),
    neither: neither.slice(0, 10),
    neitherCount: neither.length,
  };
}

/** Resolves once `count` gateway sessions (one per shard) are ready. @throws after two minutes. */
async function untilShardsReady(discord: DiscordEmulator, count: number): Promise<void> {
  const deadline = performance.now() + 120_000;
  while (discord.gatewaySessions().filter((session) => session.ready && session.connected).length < count) {
    if (performance.now() > deadline)
      throw new Error(`${count} shards did not all become ready in 2 minutes`);
    await sleep(200);
  }
}

/** Where jemalloc is, for `heraldAllocator: 'jemalloc'`. @throws when it is not installed. */
function jemallocPath(): string {
  const path = findJemalloc();
  if (!path)
    throw new Error(
      'jemalloc is not installed (Debian: apt install libjemalloc2); or run with --malloc=glibc',
    );
  return path;
}
