/**
 * The soak run: Herald as its own process (`node src/index.ts`, as `npm start` with `SHARD_COUNT=1`) against both emulators in this
 * process, driven for a while by seeded random members, messages, commands, voice moves and faults, with its
 * invariants checked continuously (see `tracker.ts`) and at the end (the ledger against the service's charges,
 * memory and open files). `soak/main.ts` is the command; `test/soak/soak.test.ts` runs three minutes of it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type HeraldProcess, startHeraldProcess } from '../bench/herald-process.ts';
import { startDiscordEmulator } from '../emulators/discord/index.ts';
import { trustedTestCertificate } from '../emulators/discord/tls.ts';
import { startTtsEmulator } from '../emulators/tts/index.ts';
import { heraldEnv } from '../test/e2e/harness.ts';
import { createFaults, type FaultKind } from './faults.ts';
import { withHeraldLog } from './incident-log.ts';
import { compareLedger, type LedgerCheck, lostRequests, readLedger } from './ledger.ts';
import { createRandom } from './prng.ts';
import { createSoakServers, type SoakServer } from './servers.ts';
import { slope } from './stats.ts';
import { createToneDetector, SOAK_SPEAKERS } from './tones.ts';
import { createTracker, type Outcome, type SilentIncident } from './tracker.ts';

/** Options of {@link runSoak}. */
export interface SoakOptions {
  readonly minutes: number;
  readonly seed: number;
  readonly servers: number;
  /** Silence with an unheard `/speak`, outside a fault's bounded wait, that is an incident (default 10 s). */
  readonly silentMs?: number;
  /** Silence with an unheard `/speak`, faults or not, that is an incident (default 60 s). */
  readonly stuckMs?: number;
  /** Mean seconds between two faults at 50 servers (scaled with the number of servers); default 5. */
  readonly faultEverySeconds?: number;
  /** Extra environment for Herald. */
  readonly heraldEnv?: Record<string, string>;
  readonly progress?: (line: string) => void;
}

/** What a soak run found. */
export interface SoakResult {
  readonly seed: number;
  readonly minutes: number;
  readonly servers: number;
  readonly machine: {
    cpus: number;
    node: string;
    commit: string;
    loadAverage: { start: number[]; end: number[] };
  };
  readonly startedAt: string;
  readonly speak: { sent: number; outcomes: Record<Outcome, number>; refusals: Record<string, number> };
  readonly autoreadMessages: number;
  readonly commands: Record<string, number>;
  readonly voiceMoves: number;
  readonly faults: Partial<Record<FaultKind, number>>;
  /** Each with what Herald logged about its server from a minute before it to 20 s after (`incident-log.ts`). */
  readonly silentIncidents: readonly (SilentIncident & { readonly heraldLog: readonly string[] })[];
  readonly ledger: LedgerCheck;
  readonly memory: {
    readonly rssMb: { first: number; last: number; max: number; slopeMbPerHour: number };
    /** V8's heap in use (Herald's /metrics): what JavaScript holds, without the allocator's slack. */
    readonly heapMb: { first: number; last: number; max: number; slopeMbPerHour: number };
    readonly openFiles: { first: number; last: number; max: number; slopePerHour: number };
  };
  /** Herald's memory and open files every 5 s (ms since the start), to look at the curve behind the slopes. */
  readonly samples: readonly { t: number; rss: number; fds: number; heap: number | undefined }[];
  readonly heraldExited: boolean;
  readonly violations: readonly string[];
  readonly heraldLogTail: string;
  /** Herald's whole log (`debug`), kept when an invariant was violated; deleted otherwise. */
  readonly heraldLogFile: string | undefined;
}

const TICK_MS = 250;
/** Quiet time at the end: no new actions, so what was accepted can finish (the longest bounded wait is 25 s). */
const DRAIN_MS = 40_000;
/** How long a fault excuses a server's silence: Herald's own bounded waits (15 s connect, 10 s TTS idle, backoff). */
const HINDER_MS = 30_000;

/** Runs the soak; never throws for a violated invariant, only for a broken world (it lists violations). */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const log = options.progress ?? (() => {});
  const random = createRandom(options.seed);
  const startedAt = new Date().toISOString();
  const loadStart = loadavg().map((value) => Math.round(value * 100) / 100);
  const [discord, tts] = await Promise.all([
    startDiscordEmulator(),
    startTtsEmulator({ speed: 2, balanceUsd: 1_000_000, speakers: [...SOAK_SPEAKERS] }),
  ]);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-soak-'));
  const databasePath = join(dataDir, 'herald.sqlite');
  const caPath = join(dataDir, 'ca.pem');
  // Outside the data folder, which goes at the end: a run that violated an invariant keeps it.
  const heraldLogFile = join(tmpdir(), `herald-soak-${options.seed}-${process.pid}.log`);
  writeFileSync(caPath, (await trustedTestCertificate()).cert);
  const servers = createSoakServers(discord, options.servers);
  const tracker = createTracker({
    servers: servers.length,
    silentMs: options.silentMs ?? 10_000,
    stuckMs: options.stuckMs ?? 60_000,
  });
  const violations: string[] = [];
  const reportedLost = new Set<string>();
  const commit = commitOf();
  const commandCounts: Record<string, number> = {};
  let autoreadMessages = 0;
  let voiceMoves = 0;
  let herald: HeraldProcess | undefined;
  const samples: { t: number; rss: number; fds: number; heap: number | undefined }[] = [];
  let ledger: LedgerCheck | undefined;
  try {
    const metricsPort = await freePort();
    herald = startHeraldProcess(
      {
        ...heraldEnv(discord, tts, databasePath),
        // The operations endpoint, for the V8 heap figures beside the kernel's RSS.
        METRICS_PORT: String(metricsPort),
        // Every session's story, for a rare incident to be explained from the run that found it (the whole log
        // goes to a file; the kept tail is the last 200,000 characters).
        LOG_LEVEL: 'debug',
        NODE_EXTRA_CA_CERTS: caPath,
        // A 402 stops spending until a re-check succeeds: every 30 s here, so the run is not refusals only.
        BUDGET_RECHECK_MINUTES: '0.5',
        IDLE_TIMEOUT_SECONDS: '120',
        ...options.heraldEnv,
      },
      [],
      dataDir,
      { logFile: heraldLogFile },
    );
    await herald.untilReady(discord.untilReady());
    await sleep(2_000);
    log(`Herald up; ${servers.length} servers; seed ${options.seed}`);
    for (const server of servers) {
      await discord.slash(
        server.admin,
        'autoread',
        { channel: server.text, enabled: true },
        { subcommand: 'channel' },
      );
    }

    const faults = createFaults({ discord, tts, servers, random, tracker, hinderMs: HINDER_MS, log });
    const detectors = servers.map(() => createToneDetector());
    const seenMessages = servers.map(() => 0);
    const start = Date.now();
    const actUntil = start + options.minutes * 60_000 - DRAIN_MS;
    const end = start + options.minutes * 60_000;
    const scale = servers.length / 50;
    let nextSample = start;
    let nextLedger = start + 30_000;
    let nextReport = start + 60_000;
    let serial = 0;

    const command = (server: SoakServer, name: string, run: () => Promise<void>): void => {
      server.busy = true;
      commandCounts[name] = (commandCounts[name] ?? 0) + 1;
      run()
        .catch((error: unknown) => violations.push(`/${name} in server ${server.index}: ${String(error)}`))
        .finally(() => {
          server.busy = false;
        });
    };

    const speak = (server: SoakServer): void => {
      const member = random.chance(0.85) ? server.inVoiceMember(random) : random.pick(server.members);
      if (!member) return;
      serial += 1;
      const tag = `g${server.index}x${serial}`;
      server.toneTurn = (server.toneTurn % (SOAK_SPEAKERS.length - 1)) + 1;
      const speaker = SOAK_SPEAKERS[server.toneTurn] ?? SOAK_SPEAKERS[1];
      const text = `${tag} ${words(random, 3 + random.int(10))}`;
      command(server, 'speak', async () => {
        const item = tracker.sent({
          guild: server.index,
          tag,
          tone: speaker?.toneHz ?? 0,
          sentAt: Date.now(),
          followUps: () => 0,
          refusal: undefined,
        });
        let reply: Awaited<ReturnType<typeof discord.slash>>;
        try {
          reply = await discord.slash(
            member,
            'speak',
            { text, speaker: speaker?.name ?? '' },
            { timeoutMs: 20_000 },
          );
        } catch (error) {
          tracker.unanswered(item, Date.now());
          violations.push(`/speak ${tag} got no answer: ${String(error)}`);
          return;
        }
        const now = Date.now();
        const joining = /^Joining your channel, about (\d+) s/.exec(reply.content);
        if (joining || /^(Speaking now|Queued at position)/.test(reply.content)) {
          item.followUps = () => reply.followUps().length;
          tracker.accepted(item, now);
          if (joining) tracker.hinder(server.index, now + (Number(joining[1]) + 15) * 1000);
        } else {
          tracker.refused(item, refusalKind(reply.content), now);
        }
      });
    };

    const actions = {
      speak: 2.0,
      message: 0.8,
      skip: 0.08,
      stop: 0.04,
      join: 0.04,
      leave: 0.03,
      move: 0.25,
      fault: 1 / (options.faultEverySeconds ?? 5),
    } as const;

    while (Date.now() < end) {
      const now = Date.now();
      if (!herald.running()) {
        violations.push('Herald exited during the run');
        break;
      }
      // What members heard since the last tick: every frame's voice, attributed to the utterance it belongs to.
      servers.forEach((server, i) => {
        const capture = discord.voice(server.guild);
        const detect = detectors[i];
        if (!detect) return;
        for (const frame of capture.frames) {
          if (!frame.silence) tracker.frame(i, detect(frame.opus), now);
        }
        capture.clear();
        const posted = discord.channelMessages(server.text);
        for (const message of posted.slice(seenMessages[i])) {
          if (SESSION_END.test(message.content)) tracker.sessionEnded(i, now);
        }
        seenMessages[i] = posted.length;
      });
      faults.tick(now);
      tracker.tick(now);

      if (now < actUntil && !faults.gatewayDown()) {
        const dt = (TICK_MS / 1000) * scale;
        for (const [action, rate] of Object.entries(actions) as [keyof typeof actions, number][]) {
          if (!random.chance(rate * dt)) continue;
          const server = random.pick(servers);
          if (action === 'fault') {
            faults.inject(now);
            continue;
          }
          if (action === 'move') {
            voiceMoves += server.moveSomeone(random, faults.count);
            continue;
          }
          if (action === 'message') {
            const member = server.inVoiceMember(random);
            if (!member) continue;
            serial += 1;
            discord.sendMessage(
              member,
              server.text,
              `g${server.index}x${serial} ${words(random, 2 + random.int(8))}`,
            );
            autoreadMessages += 1;
            continue;
          }
          if (server.busy) continue;
          if (action === 'speak') speak(server);
          else {
            const member = server.inVoiceMember(random) ?? random.pick(server.members);
            command(server, action, async () => {
              const sentAt = Date.now();
              const reply = await discord.slash(member, action, {}, { timeoutMs: 20_000 });
              const at = Date.now();
              if (action === 'skip' && /^Skipped/.test(reply.content)) tracker.skipped(server.index, at);
              if (
                (action === 'stop' && /^Stopped/.test(reply.content)) ||
                (action === 'leave' && /^Left/.test(reply.content))
              ) {
                tracker.cleared(server.index, sentAt, at);
              }
            });
          }
        }
      }

      if (now >= nextSample) {
        samples.push({
          t: now - start,
          rss: herald.rssMb(),
          fds: herald.openFiles(),
          heap: await heapUsedMb(metricsPort),
        });
        nextSample = now + 5_000;
      }
      if (now >= nextLedger) {
        // Each charged generation is given 30 s to reach the ledger; each one missing is reported once.
        const rows = await readLedger(databasePath);
        for (const lost of lostRequests(rows, tts.requests, now - 30_000)) {
          if (reportedLost.has(lost.requestId)) continue;
          reportedLost.add(lost.requestId);
          violations.push(
            `ledger: generation ${lost.requestId} charged at ${Math.round((lost.receivedAt - start) / 1000)} s is missing (text "${describeText(lost.body)}", status ${lost.status}, faults ${lost.faults.join('+') || 'none'})`,
          );
        }
        nextLedger = now + 30_000;
      }
      if (now >= nextReport) {
        const heard = tracker.all.filter((item) => item.outcome === 'heard').length;
        log(
          `${Math.round((now - start) / 60_000)} min: ${tracker.all.length} /speak (${heard} heard), ${faults.total()} faults, ${tracker.incidents.length} silent incidents, RSS ${herald.rssMb().toFixed(0)} MB, ${herald.openFiles()} open files`,
        );
        nextReport = now + 60_000;
      }
      await sleep(TICK_MS);
    }
    tracker.finish(Date.now());
    faults.close();
    const faultCounts = faults.counts();
    await herald.stop();
    ledger = compareLedger(await readLedger(databasePath), tts.requests, Number.POSITIVE_INFINITY);
    for (const lost of lostRequests(await readLedger(databasePath), tts.requests, Number.POSITIVE_INFINITY)) {
      if (reportedLost.has(lost.requestId)) continue;
      violations.push(
        `ledger: generation ${lost.requestId} charged at ${Math.round((lost.receivedAt - start) / 1000)} s is missing at the end (text "${describeText(lost.body)}", status ${lost.status}, faults ${lost.faults.join('+') || 'none'})`,
      );
    }
    if (ledger.extraRows > 0) violations.push(`ledger: ${ledger.extraRows} rows the service never charged`);
    // Recorded never exceeds charged; what was charged and not recorded is bounded by the uncertain rows.
    if (
      ledger.ledgerUsd - ledger.chargedUsd > 1e-6 ||
      ledger.chargedUsd - ledger.ledgerUsd > ledger.uncertainUpToUsd + 1e-6
    ) {
      violations.push(
        `ledger: $${ledger.ledgerUsd} recorded (and up to $${ledger.uncertainUpToUsd} uncertain), $${ledger.chargedUsd} charged`,
      );
    }
    for (const incident of tracker.incidents) {
      violations.push(
        `server ${incident.guild} ${incident.kind}: ${incident.pending} /speak waiting, nothing heard for ${Math.round(incident.waitedMs / 1000)} s`,
      );
    }
    for (const item of tracker.all) {
      if (item.outcome === 'not-heard-not-told')
        violations.push(`/speak ${item.tag} was neither heard nor told why`);
    }
    const memory = memoryOf(samples, options.minutes);
    violations.push(...memory.violations);

    const outcomes = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0])) as Record<Outcome, number>;
    const refusals: Record<string, number> = {};
    for (const item of tracker.all) {
      if (item.outcome) outcomes[item.outcome] += 1;
      if (item.refusal) refusals[item.refusal] = (refusals[item.refusal] ?? 0) + 1;
    }
    return {
      seed: options.seed,
      minutes: options.minutes,
      servers: servers.length,
      machine: {
        cpus: cpus().length,
        node: process.version,
        commit,
        loadAverage: { start: loadStart, end: loadavg().map((value) => Math.round(value * 100) / 100) },
      },
      startedAt,
      speak: { sent: tracker.all.length, outcomes, refusals },
      autoreadMessages,
      commands: commandCounts,
      voiceMoves,
      faults: faultCounts,
      silentIncidents: withHeraldLog(
        heraldLogFile,
        tracker.incidents,
        (guild) => servers[guild]?.guild.id ?? '',
      ),
      ledger,
      memory: memory.figures,
      samples: samples.map((sample) => ({ ...sample, rss: Math.round(sample.rss * 10) / 10 })),
      heraldExited: !herald.running() && violations.includes('Herald exited during the run'),
      violations,
      heraldLogTail: herald.output().slice(-20_000),
      heraldLogFile: violations.length > 0 ? heraldLogFile : undefined,
    };
  } finally {
    await herald?.stop();
    await Promise.all([discord.close(), tts.close()]);
    rmSync(dataDir, { recursive: true, force: true });
    if (violations.length === 0) rmSync(heraldLogFile, { force: true });
  }
}

const OUTCOMES: readonly Outcome[] = [
  'heard',
  'refused',
  'failed-told',
  'ended-told',
  'dropped',
  'unanswered',
  'not-heard-not-told',
];

/** Sentences Herald posts in the channel when a session ends without being asked to. */
const SESSION_END =
  /disconnected from|could not connect|lost the voice connection|voice channel was deleted|nobody is listening|nothing to say for a while|no longer speak/;

/** A refusal's reason in a few words, for counting. */
function refusalKind(content: string): string {
  if (/Join a voice channel first/.test(content)) return 'not in voice';
  if (/already speaking in/.test(content)) return 'in another channel';
  if (/queue is full|messages waiting/.test(content)) return 'queue full';
  if (/floor|budget|balance|spending/i.test(content)) return 'budget';
  if (/rate|too fast|per minute/i.test(content)) return 'rate';
  return content.slice(0, 50);
}

const WORDS = [
  'hello',
  'there',
  'the',
  'quick',
  'brown',
  'fox',
  'soak',
  'test',
  'is',
  'running',
  'again',
  'and',
  'now',
];
function words(random: ReturnType<typeof createRandom>, n: number): string {
  return Array.from({ length: n }, () => random.pick(WORDS)).join(' ');
}

/** Herald's V8 heap in use, in MB, from its /metrics; undefined when it does not answer within a second. */
async function heapUsedMb(port: number): Promise<number | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(1_000) });
    const text = await response.text();
    const match = /^nodejs_heap_size_used_bytes (\S+)$/m.exec(text);
    return match ? Number(match[1]) / 2 ** 20 : undefined;
  } catch {
    return undefined;
  }
}

/** A free TCP port on loopback. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resident memory, V8 heap and open files: first, last, highest and the slope per hour after the warm-up. */
function memoryOf(
  samples: readonly { t: number; rss: number; fds: number; heap: number | undefined }[],
  minutes: number,
) {
  // The first third (at least a minute) is warm-up: connections, caches and JIT fill up.
  const warm = samples.filter((sample) => sample.t >= Math.max(60_000, (minutes * 60_000) / 3));
  const rss = samples.map((sample) => sample.rss);
  const fds = samples.map((sample) => sample.fds);
  const round = (value: number) => Math.round(value * 10) / 10;
  const rssSlope = slope(warm.map((sample) => [sample.t / 3_600_000, sample.rss]));
  const heaps = samples.flatMap((sample) => (sample.heap === undefined ? [] : [sample.heap]));
  const heapSlope = slope(
    warm.flatMap((sample) =>
      sample.heap === undefined ? [] : [[sample.t / 3_600_000, sample.heap] as const],
    ),
  );
  const fdSlope = slope(warm.map((sample) => [sample.t / 3_600_000, sample.fds]));
  const violations: string[] = [];
  const warmFds = warm.map((sample) => sample.fds);
  // Flat means no growth beyond noise: a leaked socket per utterance or per fault would add hundreds.
  if (warmFds.length > 0 && Math.max(...warmFds) > (warmFds[0] ?? 0) + 40) {
    violations.push(`open files grew from ${warmFds[0]} to ${Math.max(...warmFds)} after the warm-up`);
  }
  // A leak raises what the heap keeps after each collection: compare its floor over the last third of the run
  // with the middle third's. RSS is reported, not judged: the allocator returns memory to the kernel when it
  // pleases (an hour's run went 171 → 320 → 227 MB with no growth of the heap floor).
  const floor = (from: number, to: number): number | undefined => {
    const values = samples.flatMap((sample) =>
      sample.heap !== undefined && sample.t >= from && sample.t < to ? [sample.heap] : [],
    );
    return values.length > 0 ? Math.min(...values) : undefined;
  };
  const runMs = minutes * 60_000;
  const middleFloor = floor(runMs / 3, (2 * runMs) / 3);
  const lastFloor = floor((2 * runMs) / 3, Number.POSITIVE_INFINITY);
  if (minutes >= 20 && middleFloor !== undefined && lastFloor !== undefined && lastFloor > middleFloor + 20) {
    violations.push(
      `the heap Herald keeps after collections grew from ${round(middleFloor)} MB to ${round(lastFloor)} MB over the run's last two thirds`,
    );
  }
  return {
    figures: {
      rssMb: {
        first: round(rss[0] ?? 0),
        last: round(rss.at(-1) ?? 0),
        max: round(Math.max(0, ...rss)),
        slopeMbPerHour: round(rssSlope),
      },
      heapMb: {
        first: round(heaps[0] ?? 0),
        last: round(heaps.at(-1) ?? 0),
        max: round(Math.max(0, ...heaps)),
        slopeMbPerHour: round(heapSlope),
      },
      openFiles: {
        first: fds[0] ?? 0,
        last: fds.at(-1) ?? 0,
        max: Math.max(0, ...fds),
        slopePerHour: round(fdSlope),
      },
    },
    violations,
  };
}

/** The first words of a recorded request's text, for a violation line. */
function describeText(body: unknown): string {
  const text = (body as { text?: unknown } | undefined)?.text;
  return typeof text === 'string' ? text.slice(0, 40) : '';
}

function commitOf(): string {
  try {
    return execGit(['rev-parse', '--short', 'HEAD']);
  } catch {
    return 'unknown';
  }
}

function execGit(args: string[]): string {
  return execFileSync('git', args, { cwd: join(import.meta.dirname, '..') })
    .toString()
    .trim();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
