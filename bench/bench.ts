/**
 * Herald's benchmark, measured from outside as an operator would see it: both emulators run in this process,
 * Herald runs as its own process (`node src/index.ts`, exactly as `npm start`), and every figure comes from the
 * voice packets the emulated Discord receives, the TTS emulator's charges and Herald's CPU and memory as the
 * kernel reports them (/proc). `bench/main.ts` is the command; the smoke test runs it at tiny scale.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import {
  type CapturedFrame,
  type Channel,
  type DiscordEmulator,
  type Guild,
  type Member,
  startDiscordEmulator,
} from '../emulators/discord/index.ts';
import { trustedTestCertificate } from '../emulators/discord/tls.ts';
import { startTtsEmulator, type TtsEmulator } from '../emulators/tts/index.ts';
import { DEFAULT_UTTERANCE_PAUSE_MS } from '../src/config.ts';
import { findJemalloc } from '../src/ops/index.ts';
import { heraldEnv } from '../test/e2e/harness.ts';
import { runBaseline } from './baseline.ts';
import { cpuMsByThreadName, cpuMsByThreadNameSince, cpuMsSince } from './cpu-time.ts';
import { type HeraldProcess, startHeraldProcess } from './herald-process.ts';
import { referenceFrameUs } from './reference-frame.ts';

/** What to run; {@link QUICK} and {@link FULL} are the two presets. */
export interface BenchOptions {
  /** Concurrent-server steps for P4, in order; the ladder stops at the first step with >1 % late packets. */
  readonly servers: readonly number[];
  /** Cold servers asking at once for P6. */
  readonly coldServers: number;
  /** Seconds of audio each server speaks in P4 and P6. */
  readonly audioSeconds: number;
  /** Repetitions of P1 and P2. */
  readonly runs: number;
  /**
   * Runs of each P4 step (default 1). At the knee the same step at the same commit has read 0.78, 13.1 and 1.41 %
   * late in three runs on the 2-vCPU machine; with more, the step reports its median run and lists every run.
   */
  readonly repeats?: number;
  /** Keep climbing the P4 ladder past the first step with >1 % late packets (for CPU and memory figures). */
  readonly allSteps?: boolean;
  /** Extra Node flags for Herald's process (e.g. `--cpu-prof`). */
  readonly heraldNodeFlags?: readonly string[];
  /** Extra environment for Herald (e.g. `UTTERANCE_PAUSE_MS`). */
  readonly heraldEnv?: Record<string, string>;
  /**
   * The memory allocator Herald runs on: `jemalloc` preloads it (`LD_PRELOAD`), as the container image does;
   * `glibc` (the default) runs Node's own. At 1,000 servers, over a day's fresh runs, jemalloc read a median of
   * 3.7 % late (0.88–21.94 %) and glibc 6.6 % (2.25–63.46 %) (README, Performance).
   */
  readonly heraldAllocator?: 'jemalloc' | 'glibc';
  /**
   * Run Herald as `npm run start:shards` with this many shard processes (one per core uses the whole machine);
   * unset: one process, as `npm start`. CPU and memory are then the manager's and its shards' together.
   */
  readonly shards?: number;
  /**
   * Herald's nice value (default {@link HERALD_NICE}: none). The emulated Discord, its members and the TTS
   * service share this machine with Herald, where on Discord they have machines of their own: with Herald niced,
   * they take the CPU they need first, so the receiver is not starved (Herald then is, once the two together need
   * more than the machine has).
   */
  readonly heraldNice?: number;
  /**
   * The nice value of the emulated voice server's receiving thread (default {@link RECEIVER_NICE}). It only
   * timestamps packets, but on two cores shared by Herald and the rest of the emulated world it waited for a core
   * like any other thread, and the wait read as Herald's lateness; on Discord it is another machine.
   */
  readonly receiverNice?: number;
  /**
   * In P4, the receiving thread reads its socket every this many ms while traffic is light rather than waking for
   * each packet (default {@link RECEIVER_NAP_MS}; 0: for each, as in P1–P3 and P6). At 800 streams the wake-ups
   * took about 0.15 ms of this machine's CPU per stream-second (7 µs a packet) that a voice server on its own
   * machine does not take from the bot's; a packet's arrival may then read up to this late, against Herald.
   */
  readonly receiverNapMs?: number;
  /**
   * In P4, the receiving thread holds every packet, with the time it arrived, until the step's streams are over,
   * instead of handing each batch to the emulator's main thread (default true; see
   * DiscordEmulator.holdVoicePackets). That thread serves the gateway, REST and the TTS service on Herald's two
   * cores; on Discord the media server is another machine. Arrival times are taken as before, on arrival.
   */
  readonly holdPackets?: boolean;
  /**
   * A diagnostic, not the issue's scenario: in P4 the members' `/speak` go out evenly over this many ms rather
   * than at the same moment (default 0, the same moment). Shows how much of the lateness comes from the start of
   * the burst.
   */
  readonly speakSpreadMs?: number;
  /**
   * For P4 and P6 (hundreds of streams at once), the emulated TTS service writes audio at most once per this many
   * ms (default {@link TTS_WRITE_EVERY_MS}), what fell due in between together. 0: each Ogg page (one 20 ms
   * packet) alone, as it falls due, which is how P1–P3 (one stream) always run: on loopback, 200 streams at 4× real
   * time are 40,000 writes a second, each waking Herald for a few hundred bytes, which a real network delivers in
   * batches; those writes were a third of the emulated world's CPU while streams started.
   */
  readonly ttsWriteEveryMs?: number;
  /**
   * Whether the emulated Discord offers DAVE (default true: Discord requires end-to-end encryption in voice
   * channels, so every figure is under it). False declines it, to show what DAVE costs: each frame is then only
   * transport-encrypted.
   */
  readonly dave?: boolean;
  /** Where to write Herald's log (warnings and errors) when the run ends. */
  readonly heraldLogFile?: string;
  /** Concurrent streams for the peer baseline's ladder (default: 10, or fewer with fewer servers). */
  readonly baselineSteps?: readonly number[];
  /** Where progress lines go. */
  readonly progress?: (line: string) => void;
}

/**
 * A few minutes on a 2-core machine, Herald as the README recommends running it on one machine: shard processes,
 * twice the cores (`--shards=0` for one process, as `npm start`). The P4 ladder stops at the first step not held.
 */
export const FULL: BenchOptions = {
  servers: [250, 500, 750, 1000],
  shards: 2 * cpus().length,
  coldServers: 200,
  audioSeconds: 10,
  runs: 10,
  baselineSteps: [10, 20, 40, 80, 160],
};

/** Seconds: what the smoke test and a loaded development machine use. */
export const QUICK: BenchOptions = { servers: [20], coldServers: 20, audioSeconds: 2, runs: 2 };

/** Median and 95th percentile of a sample, in ms. */
export interface Spread {
  readonly median: number;
  readonly p95: number;
  readonly n: number;
}

/** One P4 step. */
export interface ConcurrencyStep {
  readonly servers: number;
  /** Voice packets received (speech and the silence frames within and after it). */
  readonly packets: number;
  /**
   * Share of those arriving more than 40 ms after their slot: 20 ms per RTP sequence number after the stream's
   * first packet arrived.
   */
  readonly lateShare: number;
  /** Herald's CPU (user + system) per second of audio streamed. */
  readonly cpuMsPerStreamSecond: number;
  /**
   * Herald's minor page faults per second of audio streamed: pages of memory touched for the first time, each
   * zeroed by the kernel on Herald's time. In a fresh process's first step, mostly its heap growing to what the step
   * needs (a repeated step reads far fewer); memory given back and taken again would show here too.
   */
  readonly pageFaultsPerStreamSecond: number;
  /** Herald's resident memory while all streams play, and its growth per stream over the idle process. */
  readonly rssMb: number;
  readonly rssPerStreamKb: number;
  /** /speak interactions Herald did not acknowledge within Discord's 3 s. */
  readonly unanswered: number;
  /**
   * When each member read Herald's answer ("Speaking now…"), in ms after the members asked: the reply itself, or
   * the edit of a deferral. Over the answered /speak.
   */
  readonly answerMs: { readonly p50: number; readonly p90: number; readonly max: number };
  /** How late packets arrived after their slot (ms; negative: ahead of it), over every packet of the step. */
  readonly lateness: {
    readonly p50: number;
    readonly p90: number;
    readonly p99: number;
    readonly max: number;
  };
  /** Servers with more than 1 % of their packets late. */
  readonly serversLate: number;
  /** Servers whose member heard nothing of the utterance (no sounding packet arrived). */
  readonly silentServers: number;
  /** Packets missing inside the streams received (RTP sequence numbers skipped). */
  readonly lostPackets: number;
  /**
   * UDP datagrams this machine's kernel dropped for a full receive buffer during the step (Linux /proc/net/snmp,
   * every socket): packets the receiver lagged too far behind to take, counted in `lostPackets` when they were
   * Herald's.
   */
  readonly receiveBufferDrops: number;
  /**
   * Packets that failed transport authentication (the receiver authenticates P4's packets when the step's frames
   * are read, after the streams: see `membersDecrypt` in the emulator's options). Any fails the step.
   */
  readonly rejectedPackets: number;
  /**
   * CPU of the bench process (the emulated Discord and its receiver, the TTS service) per second of audio
   * streamed: what the machine spent on the world rather than on Herald.
   */
  readonly worldCpuMsPerStreamSecond: number;
  /**
   * The same by thread, ms per stream-second (Linux): `main` (emulated Discord's gateway, REST and interactions,
   * the voice server's decryption and capture, the TTS service), `voice-receiver` (the UDP socket), `dave-members`
   * (the members' MLS clients), `V8 helpers` (garbage collection and compilation threads), `other`.
   */
  readonly worldCpuByThread: Readonly<Record<string, number>>;
  /** p99 event-loop delay of the bench process (the emulated Discord): high values mean the receiver lagged. */
  readonly receiverLoopP99Ms: number;
  /**
   * Late packets by the second of the step they arrived in (0: the first second after the members asked), and
   * Herald's CPU in each second (ms): whether lateness comes with the downloads and joins at the start or later.
   */
  readonly bySecond: {
    readonly late: readonly number[];
    /** Late packets by the second of their own stream they fall in (0: its first second). */
    readonly lateInStream: readonly number[];
    readonly heraldCpuMs: readonly number[];
    /** The emulated world's CPU (this process, every thread) in each second, ms. */
    readonly worldCpuMs: readonly number[];
  };
  /**
   * Herald's CPU per stream-second in the second half of the audio (seconds ⌈S/2⌉ to S-1 of the step), once every
   * download and every start is behind it: what playing costs, as against `cpuMsPerStreamSecond`, which spreads
   * the whole utterance (its interaction, reservation, download and demuxing) over its audio. Null with under 2 s.
   */
  readonly steadyCpuMsPerStreamSecond: number | null;
  /**
   * With `repeats` > 1: every run of this step, in the order they ran (the step's other fields are the run with the
   * median late share, a whole run rather than a mix of several).
   */
  readonly runs?: readonly {
    readonly lateShare: number;
    readonly cpuMsPerStreamSecond: number;
    readonly steadyCpuMsPerStreamSecond: number | null;
    readonly pageFaultsPerStreamSecond: number;
    readonly unanswered: number;
    readonly held: boolean;
  }[];
}

/** The whole run, as written to bench/results. */
export interface BenchResult {
  readonly machine: {
    readonly cpus: number;
    readonly cpuModel: string;
    readonly memoryGb: number;
    readonly node: string;
    readonly commit: string;
    readonly loadAverageAtStart: readonly number[];
    readonly loadAverageAtEnd: readonly number[];
    /** The voice packets' receiving thread's nice value as set, or why it could not be set. */
    readonly receiverNice: number | string | undefined;
    /** The allocators mapped into Herald's processes, read from /proc once they were up (e.g. `jemalloc`). */
    readonly heraldAllocators: readonly string[];
    /**
     * CPU µs of one reference voice frame (DAVE and transport encryption, bench/reference-frame.ts) at the start
     * and at the end of the run: how fast this host was then, to read figures from other hosts or hours against.
     */
    readonly referenceFrameUs: { readonly atStart: number; readonly atEnd: number };
  };
  readonly options: BenchOptions;
  readonly startedAt: string;
  /** P1: TTS request received (the emulator answers at once) → first voice packet, Herald already in voice. */
  readonly p1TtsToFirstPacketMs: Spread;
  /** P2: /speak sent → first voice packet. */
  readonly p2SpeakToFirstPacketMs: { readonly cold: Spread; readonly warm: Spread };
  /** P3: silences between three queued utterances, with a TTS that streams at real time; no pause is configured. */
  readonly p3GapsMs: {
    readonly configuredPauseMs: number;
    /** Silences the listener's decoder renders (reception gaps over 60 ms, silence frames). */
    readonly gaps: readonly number[];
    /**
     * The mean silence between two utterances from packet arrival times: the time from the first sounding
     * packet to the last not covered by sounding packets, over the boundaries. Sees gaps too short to render.
     */
    readonly meanGapMs: number;
  };
  /** P4: concurrent servers speaking at once; P5 is each step's memory. */
  readonly p4Concurrency: readonly ConcurrencyStep[];
  /**
   * The largest P4 step that held: at most 1 % of packets late, none lost beyond 1 %, every server heard and every
   * /speak answered within Discord's 3 s (0 if none).
   */
  readonly p4MaxServers: number;
  /** P5: Herald's RSS idle (logged in, every server known) and per voice connection. */
  readonly p5Memory: {
    readonly idleRssMb: number;
    readonly perConnectionKb: number;
    readonly connections: number;
  };
  /** P6: cold servers asking at once. */
  readonly p6ColdBurst: {
    readonly servers: number;
    readonly heard: number;
    readonly toldSpeakingNow: number;
    readonly toldJoining: number;
    readonly toldCouldNotConnect: number;
    readonly toldSpeakingThenCouldNotConnect: number;
    readonly paidUsd: number;
    readonly paidUnheardUsd: number;
    readonly lastHeardAfterMs: number;
    /**
     * Members neither heard nor told "could not connect" when the bench stopped waiting: each one's server, the
     * last words of its /speak reply and what Herald said in its text channel (at most 10 listed).
     */
    readonly neither: readonly {
      readonly server: string;
      readonly reply: string;
      readonly said: readonly string[];
    }[];
    readonly neitherCount: number;
  };
  /** The peer-style pipeline (whole clip, then FFmpeg through prism-media), or why it was skipped. */
  readonly baseline: Awaited<ReturnType<typeof runBaseline>>;
}

const ROOT = join(import.meta.dirname, '..');
/** Herald's default nice value in the benchmark (see BenchOptions.heraldNice). */
export const HERALD_NICE = 0;
/** See {@link BenchOptions.receiverNice}: ahead of every other thread here (setting it below 0 needs root). */
export const RECEIVER_NICE = -10;
/** See {@link BenchOptions.receiverNapMs}: 2 ms, a twentieth of the 40 ms that makes a packet late. */
export const RECEIVER_NAP_MS = 2;
/** See {@link BenchOptions.ttsWriteEveryMs}: at 4× real time, 80 ms of audio (4 pages) a write. */
export const TTS_WRITE_EVERY_MS = 20;
/** 40 ms of audio per character in the TTS emulator (its default). */
const MS_PER_CHAR = 40;
/** A packet more than this behind its slot (20 ms a sequence number from its stream's first) is late: the 40 ms. */
export const LATE_MS = 40;

interface Server {
  readonly guild: Guild;
  readonly text: Channel;
  readonly voice: Channel;
  readonly member: Member;
}

/** Runs every figure once and returns them; never throws for a bad figure, only for a broken world. */
export async function runBench(options: BenchOptions): Promise<BenchResult> {
  const log = options.progress ?? (() => {});
  const startedAt = new Date().toISOString();
  const loadAverageAtStart = loadavg().map((value) => round(value, 2));
  const referenceAtStart = referenceFrameUs();
  const maxWarm = Math.max(...options.servers, 1);
  const dave = options.dave ?? true;
  const [discord, tts] = await Promise.all([
    // Sharded, every shard may identify at once (a large bot's max_concurrency), rather than one per 5.5 s.
    startDiscordEmulator({
      dave,
      ...(options.shards ? { maxConcurrency: 16 } : {}),
      receiverNice: options.receiverNice ?? RECEIVER_NICE,
    }),
    startTtsEmulator({ speed: 4, maxAudioMs: 60_000, balanceUsd: 1_000_000 }),
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
    const p3 = await measureGaps(discord, tts, first, pauseMs);
    log(
      `P3 done: mean gap ${p3.meanGapMs} ms (rendered: ${p3.gaps.map((gap) => gap.toFixed(0)).join(', ')} ms)`,
    );

    // From here on hundreds of streams at once (P4, then P6): writes batched as a network delivers them.
    tts.configure({ writeEveryMs: options.ttsWriteEveryMs ?? TTS_WRITE_EVERY_MS });
    const steps: ConcurrencyStep[] = [];
    let inVoice = 1;
    for (const n of options.servers) {
      await joinAll(discord, servers.slice(inVoice, n), dave);
      inVoice = Math.max(inVoice, n);
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
          ),
        );
      }
      const step = medianRun(runs);
      steps.push(step);
      log(
        `P4 ${n} servers: ${(step.lateShare * 100).toFixed(2)} % late, ${step.cpuMsPerStreamSecond.toFixed(2)} ms CPU/stream-s, RSS ${step.rssMb.toFixed(0)} MB`,
      );
      if (!held(step) && !options.allSteps) break;
    }
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

    const ok = steps.filter(held);
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
        heraldAllocators,
        referenceFrameUs: { atStart: referenceAtStart, atEnd: referenceFrameUs() },
      },
      options: {
        ...options,
        ttsWriteEveryMs: options.ttsWriteEveryMs ?? TTS_WRITE_EVERY_MS,
        receiverNapMs: options.receiverNapMs ?? RECEIVER_NAP_MS,
        holdPackets: options.holdPackets ?? true,
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

async function measureLatency(discord: DiscordEmulator, tts: TtsEmulator, server: Server, runs: number) {
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
    const before = tts.requests.length;
    start = performance.now();
    await Promise.all([
      discord.slash(server.member, 'speak', { text: `Warm number ${i}.` }),
      capture.untilFrames(1, { timeoutMs: 30_000 }),
    ]);
    // When the packet arrived, not when both waits were over: the interaction's reply may come after it.
    const firstPacket = firstSoundAt(capture);
    warm.push(firstPacket - start);
    const request = tts.requests
      .slice(before)
      .find((r) => r.path.endsWith('/generate') || r.method === 'POST');
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

async function measureGaps(discord: DiscordEmulator, tts: TtsEmulator, server: Server, pauseMs: number) {
  const capture = discord.voice(server.guild);
  tts.configure({ speed: 1 });
  try {
    await discord.slash(server.member, 'join');
    await capture.untilConnected();
    capture.clear();
    for (const text of ['First of three.', 'Second of three.', 'Third of three.']) {
      await discord.slash(server.member, 'speak', { text });
    }
    const heard = await capture.untilSilent({ quietMs: 800, timeoutMs: 60_000 });
    const sounding = capture.frames.filter((frame) => !frame.silence);
    const first = sounding[0]?.receivedAt ?? 0;
    const last = sounding.at(-1)?.receivedAt ?? 0;
    const silentMs = last - first + FRAME_MS - sounding.length * FRAME_MS;
    return {
      configuredPauseMs: pauseMs,
      gaps: heard.gapsMs.map((gap) => round(gap, 1)),
      meanGapMs: sounding.length > 0 ? round(silentMs / 2, 1) : Number.NaN,
    };
  } finally {
    tts.configure({ speed: 4 });
  }
}

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

/** Every server's member runs /speak at the same moment; returns lateness, CPU and memory. */
async function speakAll(
  discord: DiscordEmulator,
  herald: HeraldProcess,
  servers: readonly Server[],
  audioSeconds: number,
  idleRssMb: number,
  receiverNapMs: number,
  speakSpreadMs: number,
  holdPackets: boolean,
): Promise<ConcurrencyStep> {
  const text = utteranceOf(audioSeconds);
  for (const server of servers) discord.voice(server.guild).clear();
  // The receiver records each packet's arrival and RTP header; members decrypting 50 frames a second each would
  // take this machine's cores from Herald and delay the very arrival times measured (P1–P3 and P6 decrypt).
  discord.setMembersDecrypt(false);
  discord.setReceiverNap(receiverNapMs);
  if (holdPackets) discord.holdVoicePackets();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const cpuBefore = herald.cpuMs();
  const faultsBefore = herald.minorFaults();
  const dropsBefore = udpReceiveBufferErrors();
  const rejectedBefore = discord.rejectedVoicePackets;
  const worldBefore = process.cpuUsage();
  const worldThreadsBefore = cpuMsByThreadName();
  let rssMb = 0;
  let unanswered = 0;
  const answeredAt: number[] = [];
  const stepStart = performance.now();
  let ended: {
    cpuMs: number;
    faults: number;
    worldCpuMs: number;
    worldThreads: ReturnType<typeof cpuMsByThreadNameSince>;
  };
  const cpuAt: number[] = [cpuBefore];
  const sampler = setInterval(() => {
    rssMb = Math.max(rssMb, herald.rssMb());
  }, 500);
  const worldAt: number[] = [0];
  const cpuSampler = setInterval(() => {
    cpuAt.push(herald.cpuMs());
    worldAt.push(cpuMsSince(worldBefore));
  }, 1000);
  try {
    const answers = await Promise.all(
      servers.map(async (server, i) => {
        if (speakSpreadMs > 0) await sleep((speakSpreadMs * i) / servers.length);
        return discord.slash(server.member, 'speak', { text }).then(
          () => {
            answeredAt.push(performance.now() - stepStart);
            return true;
          },
          () => false,
        );
      }),
    );
    unanswered = answers.filter((answered) => !answered).length;
    if (holdPackets) await untilHeldQuiet(discord, servers.length, audioSeconds * 1000 + 60_000);
    else await untilQuiet(discord, servers, audioSeconds * 1000 + 60_000);
  } finally {
    clearInterval(sampler);
    clearInterval(cpuSampler);
    loop.disable();
    // Read before the held packets are captured: that work comes after the streams, when nothing plays.
    ended = {
      cpuMs: herald.cpuMs() - cpuBefore,
      faults: herald.minorFaults() - faultsBefore,
      worldCpuMs: cpuMsSince(worldBefore),
      worldThreads: cpuMsByThreadNameSince(worldThreadsBefore),
    };
    if (holdPackets) await discord.releaseVoicePackets();
    discord.setMembersDecrypt(true);
    discord.setReceiverNap(0);
  }
  const { cpuMs, faults, worldCpuMs, worldThreads } = ended;
  const receiveBufferDrops = udpReceiveBufferErrors() - dropsBefore;
  let packets = 0;
  let late = 0;
  let lost = 0;
  let silentServers = 0;
  let serversLate = 0;
  const offsets: number[] = [];
  const lateBySecond: number[] = [];
  const lateByStreamSecond: number[] = [];
  let streamedMs = 0;
  for (const server of servers) {
    // Every packet, silence frames included (speech has pauses, encoded as Opus silence); each has its slot, 20 ms per
    // RTP sequence number, so a lost packet does not shift the others.
    const frames = discord.voice(server.guild).frames;
    const first = frames[0];
    // Reading each frame's payload authenticates it (the receiver left that for after the step): every one is read.
    let heardSpeech = false;
    for (const frame of frames) heardSpeech = !frame.silence || heardSpeech;
    if (!heardSpeech) silentServers++;
    if (!first) continue;
    // As a listener's jitter buffer plays them: from the first packet's arrival, 20 ms per sequence number. Packets
    // sent ahead (@discordjs/voice's player catches up after its event loop was held) wait in that buffer.
    const slotOf = (frame: CapturedFrame) => (frame.seq - first.seq + 2 ** 16) % 2 ** 16;
    const start = first.receivedAt;
    let lastSlot = 0;
    let lateHere = 0;
    for (const frame of frames) {
      packets++;
      const slot = slotOf(frame);
      lastSlot = Math.max(lastSlot, slot);
      const offset = frame.receivedAt - (start + slot * 20);
      offsets.push(offset);
      if (offset > LATE_MS) {
        lateHere++;
        const second = Math.max(0, Math.floor((frame.receivedAt - stepStart) / 1000));
        lateBySecond[second] = (lateBySecond[second] ?? 0) + 1;
        const own = Math.floor(slot / 50);
        lateByStreamSecond[own] = (lateByStreamSecond[own] ?? 0) + 1;
      }
    }
    late += lateHere;
    if (lateHere > 0.01 * frames.length) serversLate++;
    lost += Math.max(0, lastSlot + 1 - frames.length);
    streamedMs += frames.length * 20;
  }
  const perSecond = (at: readonly number[]) => at.slice(1).map((ms, i) => Math.round(ms - (at[i] ?? 0)));
  const cpuPerSecond = perSecond(cpuAt);
  const steady = cpuPerSecond.slice(Math.ceil(audioSeconds / 2), Math.floor(audioSeconds));
  return {
    servers: servers.length,
    packets,
    lateShare: packets === 0 ? 1 : round(late / packets, 5),
    cpuMsPerStreamSecond: streamedMs === 0 ? 0 : round(cpuMs / (streamedMs / 1000), 3),
    pageFaultsPerStreamSecond: streamedMs === 0 ? 0 : round(faults / (streamedMs / 1000), 1),
    worldCpuMsPerStreamSecond: streamedMs === 0 ? 0 : round(worldCpuMs / (streamedMs / 1000), 3),
    worldCpuByThread: byThreadGroup(worldThreads, streamedMs / 1000),
    rssMb: round(rssMb, 1),
    rssPerStreamKb: round(((rssMb - idleRssMb) * 1024) / servers.length, 1),
    unanswered,
    answerMs: (({ p50, p90, max }) => ({ p50, p90, max }))(percentiles(answeredAt)),
    lateness: percentiles(offsets),
    serversLate,
    silentServers,
    lostPackets: lost,
    rejectedPackets: discord.rejectedVoicePackets - rejectedBefore,
    receiveBufferDrops,
    receiverLoopP99Ms: round(loop.percentile(99) / 1e6, 1),
    bySecond: {
      late: Array.from(lateBySecond, (count) => count ?? 0),
      lateInStream: Array.from(lateByStreamSecond, (count) => count ?? 0),
      heraldCpuMs: cpuPerSecond,
      worldCpuMs: perSecond(worldAt),
    },
    steadyCpuMsPerStreamSecond:
      steady.length === 0
        ? null
        : round(steady.reduce((sum, ms) => sum + ms, 0) / steady.length / servers.length, 3),
  };
}

/** OS thread name → its group in {@link ConcurrencyStep.worldCpuByThread}; any other thread is `other`. */
const THREAD_GROUPS: Readonly<Record<string, string>> = {
  MainThread: 'main',
  'voice-receiver': 'voice-receiver',
  'dave-members': 'dave-members',
  V8Worker: 'V8 helpers',
};

/** Thread CPU (ms, by OS thread name) grouped by {@link THREAD_GROUPS}, per stream-second. */
function byThreadGroup(byName: ReadonlyMap<string, number>, streamSeconds: number): Record<string, number> {
  const groups = new Map([...Object.values(THREAD_GROUPS), 'other'].map((group) => [group, 0]));
  for (const [name, ms] of byName) {
    const group = THREAD_GROUPS[name] ?? 'other';
    groups.set(group, (groups.get(group) ?? 0) + ms);
  }
  return Object.fromEntries(
    [...groups].map(([group, ms]) => [group, streamSeconds === 0 ? 0 : round(ms / streamSeconds, 3)]),
  );
}

function percentiles(values: number[]): ConcurrencyStep['lateness'] {
  const sorted = values.sort((a, b) => a - b);
  const at = (q: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0, 1);
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: round(sorted.at(-1) ?? 0, 1) };
}

/** UDP `RcvbufErrors` from /proc/net/snmp (0 where there is no such file). */
function udpReceiveBufferErrors(): number {
  try {
    const lines = readFileSync('/proc/net/snmp', 'utf8').split('\n');
    const [names, values] = lines.filter((line) => line.startsWith('Udp:')).map((line) => line.split(/\s+/));
    const at = names?.indexOf('RcvbufErrors') ?? -1;
    return at < 0 ? 0 : Number(values?.[at] ?? 0);
  } catch {
    return 0;
  }
}

/** The run with the median late share (the lower middle of an even count), with every run listed when several. */
export function medianRun(runs: readonly ConcurrencyStep[]): ConcurrencyStep {
  const sorted = [...runs].sort((a, b) => a.lateShare - b.lateShare);
  const median = sorted[Math.floor((sorted.length - 1) / 2)] as ConcurrencyStep;
  if (runs.length === 1) return median;
  return {
    ...median,
    runs: runs.map((run) => ({
      lateShare: run.lateShare,
      cpuMsPerStreamSecond: run.cpuMsPerStreamSecond,
      steadyCpuMsPerStreamSecond: run.steadyCpuMsPerStreamSecond,
      pageFaultsPerStreamSecond: run.pageFaultsPerStreamSecond,
      unanswered: run.unanswered,
      held: held(run),
    })),
  };
}

/** Whether a P4 step held: ≤1 % late, ≤1 % lost, every packet authentic, every server heard, every /speak answered in time. */
function held(step: ConcurrencyStep): boolean {
  return (
    step.lateShare <= 0.01 &&
    step.lostPackets <= 0.01 * step.packets &&
    step.silentServers === 0 &&
    step.rejectedPackets === 0 &&
    step.unanswered === 0
  );
}

/** Servers Herald is not in voice with ask at once; who heard, who was told what, what was paid for nothing. */
async function coldBurst(
  discord: DiscordEmulator,
  tts: TtsEmulator,
  servers: readonly Server[],
  audioSeconds: number,
): Promise<BenchResult['p6ColdBurst']> {
  const text = utteranceOf(audioSeconds);
  const before = tts.requests.length;
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
  const charged = tts.requests.slice(before).filter((request) => request.chargedUsd > 0);
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

/**
 * Resolves when every server has been heard and then quiet for 500 ms (or `gaveUp` says it never will), or at
 * `timeoutMs`. Polls the captured frames: the capture's own untilSilent decodes the audio, and decoding hundreds
 * of streams while others still arrive would delay the receiver's timestamps and read as late packets.
 */
async function untilQuiet(
  discord: DiscordEmulator,
  servers: readonly Server[],
  timeoutMs: number,
  gaveUp: (server: Server) => boolean = () => false,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const now = performance.now();
    const done = servers.every((server) => {
      const last = discord.voice(server.guild).frames.at(-1);
      return (last !== undefined && now - last.receivedAt > 500) || gaveUp(server);
    });
    if (done) return;
    await sleep(200);
  }
}

/**
 * {@link untilQuiet} while the receiving thread holds the packets: resolves once packets from at least `servers`
 * voice sessions are held and none arrived for 500 ms, or at `timeoutMs`.
 */
async function untilHeldQuiet(discord: DiscordEmulator, servers: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const held = await discord.heldVoicePackets();
    const last = held.lastReceivedAt;
    if (held.sources >= servers && last !== undefined && performance.now() - last > 500) return;
    await sleep(200);
  }
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

/** Text the TTS emulator turns into `seconds` of audio. */
function utteranceOf(seconds: number): string {
  const words = 'Herald reads this sentence aloud for the benchmark. ';
  return words
    .repeat(Math.ceil((seconds * 1000) / MS_PER_CHAR / words.length))
    .slice(0, (seconds * 1000) / MS_PER_CHAR);
}

function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { median: round(at(0.5), 1), p95: round(at(0.95), 1), n: values.length };
}

export function commitOf(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
  } catch {
    return 'unknown';
  }
}

/** `value` to `digits` decimals; never -0 (JSON writes it as 0, so a result would not survive its own file). */
export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor + 0;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lets start-up work (command registration, GUILD_CREATE handling) finish before anything is measured. */
function settle(): Promise<void> {
  return sleep(500);
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
