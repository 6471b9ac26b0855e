/**
 * P4: every server's member runs `/speak` at the same moment, with Herald already in voice; what is measured is
 * how late each voice packet arrives, what Herald and the emulated world spend, and how many are answered in time.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { CapturedFrame, DiscordEmulator, HeldBy } from '../emulators/discord/index.ts';
import type { TtsEmulatorHandle } from '../emulators/tts/index.ts';
import { round, type Server, sleep, utteranceOf } from './common.ts';
import { cpuMsByThreadName, cpuMsByThreadNameSince, cpuMsSince } from './cpu-time.ts';
import type { HeraldProcess } from './herald-process.ts';
import { type ConcurrencyStep, LATE_MS } from './options.ts';
import {
  allPlayingSeconds,
  cpuMsPerUtterance,
  rushFigures,
  type StreamTiming,
  startLatency,
  type TimedPacket,
} from './rush.ts';

/** Every server's member runs /speak at the same moment; returns lateness, CPU and memory. */
export async function speakAll(
  discord: DiscordEmulator,
  herald: HeraldProcess,
  servers: readonly Server[],
  audioSeconds: number,
  idleRssMb: number,
  receiverNapMs: number,
  speakSpreadMs: number,
  holdPackets: boolean,
  /** A built held-reader (buildHeldReader) to hold the packets with, if any. */
  heldReader: string | undefined,
  /** This step's run over the whole bench (0, 1, …): with the server's number, it makes each /speak's text its own. */
  take = 0,
  /** The emulated TTS service: when each server's request reached it splits the start latency in two. */
  tts?: TtsEmulatorHandle,
): Promise<ConcurrencyStep> {
  const plain = utteranceOf(audioSeconds);
  // Each member says something of their own, as in a real rush: with the audio cache on, every start is a miss
  // and every end a cache write, whichever run or footing came before.
  const textOf = (i: number) => {
    const tag = `${startTag(take, i)} `;
    return tag + plain.slice(tag.length);
  };
  for (const server of servers) discord.voice(server.guild).clear();
  // The receiver records each packet's arrival and RTP header; members decrypting 50 frames a second each would
  // take this machine's cores from Herald and delay the very arrival times measured (P1–P3 and P6 decrypt).
  discord.setMembersDecrypt(false);
  discord.setReceiverNap(receiverNapMs);
  if (holdPackets) discord.holdVoicePackets(heldReader);
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
  const askedAt: number[] = [];
  const requestsBefore = (await tts?.requestCount()) ?? 0;
  const stepStart = performance.now();
  let ended: {
    cpuMs: number;
    faults: number;
    worldCpuMs: number;
    worldThreads: ReturnType<typeof cpuMsByThreadNameSince>;
    heldBy: HeldBy | undefined;
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
        askedAt[i] = performance.now() - stepStart;
        return discord.slash(server.member, 'speak', { text: textOf(i) }).then(
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
    const cpuMs = herald.cpuMs() - cpuBefore;
    const faults = herald.minorFaults() - faultsBefore;
    const worldThreads = cpuMsByThreadNameSince(worldThreadsBefore);
    let worldCpuMs = cpuMsSince(worldBefore);
    const heldBy = holdPackets ? (await discord.heldVoicePackets()).reader : undefined;
    if (heldBy?.by === 'native') {
      // A process of its own, started for this step: all it spent is this step's, and the world's.
      worldCpuMs += heldBy.cpuMs;
      worldThreads.set('voice-receiver', (worldThreads.get('voice-receiver') ?? 0) + heldBy.cpuMs);
    }
    ended = { cpuMs, faults, worldCpuMs, worldThreads, heldBy };
    if (holdPackets) await discord.releaseVoicePackets();
    discord.setMembersDecrypt(true);
    discord.setReceiverNap(0);
  }
  const { cpuMs, faults, worldCpuMs, worldThreads, heldBy } = ended;
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
  const streams: StreamTiming[] = [];
  for (const [i, server] of servers.entries()) {
    // Every packet, silence frames included (speech has pauses, encoded as Opus silence); each has its slot, 20 ms per
    // RTP sequence number, so a lost packet does not shift the others.
    const frames = discord.voice(server.guild).frames;
    const first = frames[0];
    // Reading each frame's payload authenticates it (the receiver left that for after the step): every one is read.
    let heardSpeech = false;
    for (const frame of frames) heardSpeech = !frame.silence || heardSpeech;
    if (!heardSpeech) silentServers++;
    const timed: TimedPacket[] = [];
    streams.push({ askedAtSeconds: (askedAt[i] ?? 0) / 1000, packets: timed });
    if (!first) continue;
    // As a listener's jitter buffer plays them: from the first packet's arrival, each when its RTP timestamp says
    // (48 per ms; a packet may hold up to 60 ms, VOICE_FRAMES_PER_PACKET). Packets sent ahead
    // (@discordjs/voice's player catches up after its event loop was held) wait in that buffer. A lost packet is
    // one missing sequence number.
    const dueMsOf = (frame: CapturedFrame) => ((frame.timestamp - first.timestamp + 2 ** 32) % 2 ** 32) / 48;
    const seqOf = (frame: CapturedFrame) => (frame.seq - first.seq + 2 ** 16) % 2 ** 16;
    const start = first.receivedAt;
    let lastSeq = 0;
    let lastDueMs = 0;
    let lateHere = 0;
    for (const frame of frames) {
      packets++;
      const dueMs = dueMsOf(frame);
      lastSeq = Math.max(lastSeq, seqOf(frame));
      lastDueMs = Math.max(lastDueMs, dueMs);
      const offset = frame.receivedAt - (start + dueMs);
      offsets.push(offset);
      timed.push({ atSeconds: (frame.receivedAt - stepStart) / 1000, latenessMs: offset });
      if (offset > LATE_MS) {
        lateHere++;
        const second = Math.max(0, Math.floor((frame.receivedAt - stepStart) / 1000));
        lateBySecond[second] = (lateBySecond[second] ?? 0) + 1;
        const own = Math.floor(dueMs / 1000);
        lateByStreamSecond[own] = (lateByStreamSecond[own] ?? 0) + 1;
      }
    }
    late += lateHere;
    if (lateHere > 0.01 * frames.length) serversLate++;
    lost += Math.max(0, lastSeq + 1 - frames.length);
    // The audio's length: up to the last packet, which is a 20 ms frame of silence (the end of transmission).
    streamedMs += lastDueMs + 20;
  }
  // When each server's synthesis request reached the TTS service, in ms since the step began (its Date.now clock).
  const ttsAt = new Map<string, number>();
  for (const request of (await tts?.requests(requestsBefore)) ?? []) {
    const text = (request.body as { text?: unknown } | undefined)?.text;
    const tag = typeof text === 'string' ? /^Take [a-j]+ [a-j]+\./.exec(text)?.[0] : undefined;
    if (tag && !ttsAt.has(tag)) ttsAt.set(tag, request.receivedAt - performance.timeOrigin - stepStart);
  }
  const perSecond = (at: readonly number[]) => at.slice(1).map((ms, i) => Math.round(ms - (at[i] ?? 0)));
  const cpuPerSecond = perSecond(cpuAt);
  // What playing costs: the seconds in which every stream played, once every start was behind it and before any end.
  // A rush whose starts run past half the audio left the second half's seconds full of starts, and a rate read there
  // counted them as playing (1,000 servers: 1.36 ms a stream-second against 0.85 with all playing and none starting).
  // Without such a second (the starts outlasting the first end), the second half of the audio, as before.
  const allPlaying = allPlayingSeconds(streams).filter((second) => second < cpuPerSecond.length);
  const [steadyFrom, steady] =
    allPlaying.length > 0
      ? (['all playing', allPlaying.map((second) => cpuPerSecond[second] ?? 0)] as const)
      : ([
          'second half of the audio',
          cpuPerSecond.slice(Math.ceil(audioSeconds / 2), Math.floor(audioSeconds)),
        ] as const);
  const steadyCpuMsPerStreamSecond =
    steady.length === 0
      ? null
      : round(steady.reduce((sum, ms) => sum + ms, 0) / steady.length / servers.length, 3);
  return {
    servers: servers.length,
    packets,
    streamedSeconds: round(streamedMs / 1000, 1),
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
    heldBy,
    rush: rushFigures(streams),
    startSplit: splitStarts(servers.length, take, askedAt, ttsAt, streams),
    bySecond: {
      late: Array.from(lateBySecond, (count) => count ?? 0),
      lateInStream: Array.from(lateByStreamSecond, (count) => count ?? 0),
      heraldCpuMs: cpuPerSecond,
      worldCpuMs: perSecond(worldAt),
    },
    steadyCpuMsPerStreamSecond,
    steadyCpuFrom: steadyFrom,
    cpuMsPerUtterance: cpuMsPerUtterance({
      cpuMs,
      streamedSeconds: streamedMs / 1000,
      steadyCpuMsPerStreamSecond,
      utterances: servers.length - silentServers,
    }),
  };
}

/** The words a P4 /speak begins with, unchanged by Herald's text clean-up (letters only): its take and server. */
function startTag(take: number, server: number): string {
  const letters = (n: number) =>
    [...String(n)].map((digit) => String.fromCharCode(97 + Number(digit))).join('');
  return `Take ${letters(take)} ${letters(server)}.`;
}

/** `/speak` → the TTS request, and the TTS request → the first packet, in ms over the servers with both. */
function splitStarts(
  count: number,
  take: number,
  askedAt: readonly number[],
  ttsAt: ReadonlyMap<string, number>,
  streams: readonly StreamTiming[],
): ConcurrencyStep['startSplit'] {
  const toRequest: number[] = [];
  const toPacket: number[] = [];
  for (let i = 0; i < count; i++) {
    const requested = ttsAt.get(startTag(take, i));
    const first = streams[i]?.packets[0];
    if (requested === undefined || first === undefined) continue;
    toRequest.push(requested - (askedAt[i] ?? 0));
    toPacket.push(first.atSeconds * 1000 - requested);
  }
  return { toTtsRequestMs: startLatency(toRequest), ttsRequestToFirstPacketMs: startLatency(toPacket) };
}

/** OS thread name → its group in {@link ConcurrencyStep.worldCpuByThread}; any other thread is `other`. */
const THREAD_GROUPS: Readonly<Record<string, string>> = {
  MainThread: 'main',
  'voice-receiver': 'voice-receiver',
  'dave-members': 'dave-members',
  'tts-service': 'tts-service',
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
      worstSecondLatePercent: run.rush.worstSecond.latePercent,
      startLatencyMs: run.rush.startLatencyMs,
      held: held(run),
    })),
  };
}

/** Whether a P4 step held: ≤1 % late, ≤1 % lost, every packet authentic, every server heard, every /speak answered in time. */
export function held(step: ConcurrencyStep): boolean {
  return (
    step.lateShare <= 0.01 &&
    step.lostPackets <= 0.01 * step.packets &&
    step.silentServers === 0 &&
    step.rejectedPackets === 0 &&
    step.unanswered === 0
  );
}

/**
 * Resolves when every server has been heard and then quiet for 500 ms (or `gaveUp` says it never will), or at
 * `timeoutMs`. Polls the captured frames: the capture's own untilSilent decodes the audio, and decoding hundreds
 * of streams while others still arrive would delay the receiver's timestamps and read as late packets.
 */
export async function untilQuiet(
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
export async function untilHeldQuiet(
  discord: DiscordEmulator,
  servers: number,
  timeoutMs: number,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const held = await discord.heldVoicePackets();
    const last = held.lastReceivedAt;
    if (held.sources >= servers && last !== undefined && performance.now() - last > 500) return;
    await sleep(200);
  }
}
