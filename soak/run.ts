/**
 * The soak run: Herald as its own process (`node src/index.ts`, as `npm start` with `SHARD_COUNT=1`) against both emulators in this
 * process, driven for a while by seeded random members, messages, commands, voice moves and faults (`traffic.ts`), with its
 * invariants checked continuously (see `tracker.ts`) and at the end (the ledger against the service's charges,
 * memory and open files, `memory.ts`). `soak/main.ts` is the command; `test/soak/soak.test.ts` runs three minutes of it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type HeraldProcess, startHeraldProcess } from '../bench/herald-process.ts';
import { startDiscordEmulator } from '../emulators/discord/index.ts';
import { trustedTestCertificate } from '../emulators/discord/tls.ts';
import { type RecordedRequest, startTtsEmulator } from '../emulators/tts/index.ts';
import { heraldEnv } from '../test/e2e/harness.ts';
import { createFaults, type FaultKind, type Outage } from './faults.ts';
import { withHeraldLog } from './incident-log.ts';
import {
  compareLedger,
  type LedgerCheck,
  type LedgerRow,
  lostRequests,
  readLedger,
  readPostgresLedger,
} from './ledger.ts';
import { heapUsedMb, type MemoryFigures, type MemorySample, memoryOf } from './memory.ts';
import { createRandom } from './prng.ts';
import { createSoakServers } from './servers.ts';
import { createToneDetector, SOAK_SPEAKERS } from './tones.ts';
import { createTracker, type Outcome, type SilentIncident } from './tracker.ts';
import { createTraffic } from './traffic.ts';
import { type VoiceFigures, voiceFigures } from './voice.ts';

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
  /**
   * Herald on this PostgreSQL database (its URL) rather than a SQLite file; the soak stops and starts its server
   * now and then (a `database-outage` fault).
   */
  readonly postgres?: (Outage & { readonly url: string }) | undefined;
  /** Herald as the sharding manager with this many shard processes (`npm run start:shards`); default one process. */
  readonly shards?: number | undefined;
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
  /** Where Herald kept its state, and as how many shard processes it ran. */
  readonly herald: { readonly database: 'sqlite' | 'postgres'; readonly shards: number };
  readonly speak: { sent: number; outcomes: Record<Outcome, number>; refusals: Record<string, number> };
  readonly autoreadMessages: number;
  readonly commands: Record<string, number>;
  readonly voiceMoves: number;
  readonly faults: Partial<Record<FaultKind, number>>;
  /** Each with what Herald logged about its server from a minute before it to 20 s after (`incident-log.ts`). */
  readonly silentIncidents: readonly (SilentIncident & { readonly heraldLog: readonly string[] })[];
  readonly ledger: LedgerCheck;
  readonly memory: MemoryFigures;
  /** Herald's voice counters at the end (its /metrics); undefined when it did not answer. */
  readonly voice: VoiceFigures | undefined;
  /** Herald's memory and open files every 5 s (ms since the start), to look at the curve behind the slopes. */
  readonly samples: readonly MemorySample[];
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
  const shards = options.shards ?? 1;
  const ledgerRows = (): Promise<LedgerRow[]> =>
    options.postgres ? readPostgresLedger(options.postgres.url) : readLedger(databasePath);
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
  let herald: HeraldProcess | undefined;
  const samples: MemorySample[] = [];
  let ledger: LedgerCheck | undefined;
  try {
    const metricsPort = await freePort();
    herald = startHeraldProcess(
      {
        ...heraldEnv(discord, tts, databasePath),
        ...(options.postgres ? { DATABASE_URL: options.postgres.url, DATABASE_POOL_SIZE: '4' } : {}),
        ...(shards > 1 ? { SHARD_COUNT: String(shards) } : {}),
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
      { logFile: heraldLogFile, entry: shards > 1 ? 'shards' : 'index' },
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

    const faults = createFaults({
      discord,
      tts,
      servers,
      random,
      tracker,
      hinderMs: HINDER_MS,
      log,
      database: options.postgres,
    });
    const detectors = servers.map(() => createToneDetector());
    const seenMessages = servers.map(() => 0);
    const start = Date.now();
    const actUntil = start + options.minutes * 60_000 - DRAIN_MS;
    const end = start + options.minutes * 60_000;
    let nextSample = start;
    let nextLedger = start + 30_000;
    let nextReport = start + 60_000;

    const traffic = createTraffic({
      discord,
      servers,
      random,
      tracker,
      faults,
      violations,
      faultEverySeconds: options.faultEverySeconds ?? 5,
    });

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

      if (now < actUntil && !faults.gatewayDown()) traffic.act(now, TICK_MS);

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
        // Each charged generation is given 30 s to reach the ledger; each one missing is reported once. (While
        // PostgreSQL is away the ledger cannot be read: it is looked at again 5 s later.)
        const rows = faults.databaseDown() ? undefined : await ledgerRows().catch(() => undefined);
        for (const lost of rows ? lostRequests(rows, tts.requests, now - 30_000) : []) {
          if (reportedLost.has(lost.requestId)) continue;
          reportedLost.add(lost.requestId);
          violations.push(
            `ledger: generation ${lost.requestId} charged at ${Math.round((lost.receivedAt - start) / 1000)} s is missing (text "${describeText(lost.body)}", status ${lost.status}, faults ${lost.faults.join('+') || 'none'})`,
          );
        }
        nextLedger = now + (rows ? 30_000 : 5_000);
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
    while (faults.databaseDown()) await sleep(250);
    faults.close();
    const faultCounts = faults.counts();
    // What Herald's counters say of its voice, read before it stops.
    const voice = await voiceFigures(metricsPort);
    await herald.stop();
    const finalRows = await ledgerRows();
    ledger = compareLedger(finalRows, tts.requests, Number.POSITIVE_INFINITY);
    for (const lost of lostRequests(finalRows, tts.requests, Number.POSITIVE_INFINITY)) {
      if (reportedLost.has(lost.requestId)) continue;
      violations.push(
        `ledger: generation ${lost.requestId} charged at ${Math.round((lost.receivedAt - start) / 1000)} s is missing at the end (text "${describeText(lost.body)}", status ${lost.status}, faults ${lost.faults.join('+') || 'none'})`,
      );
    }
    if (ledger.extraRows > 0) violations.push(`ledger: ${ledger.extraRows} rows the service never charged`);
    // Every /speak and every message carries its own tag: one paid for twice was generated twice.
    for (const [tag, times] of paidTwice(tts.requests)) {
      violations.push(`${tag} was paid for ${times} times`);
    }
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
      herald: { database: options.postgres ? 'postgres' : 'sqlite', shards },
      speak: { sent: tracker.all.length, outcomes, refusals },
      ...traffic.counts(),
      faults: faultCounts,
      silentIncidents: withHeraldLog(
        heraldLogFile,
        tracker.incidents,
        (guild) => servers[guild]?.guild.id ?? '',
      ),
      ledger,
      memory: memory.figures,
      voice,
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

/** A free TCP port on loopback. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Tags (`g<server>x<serial>`) the service charged for more than once, with how many times. */
function paidTwice(requests: readonly RecordedRequest[]): [string, number][] {
  const charged = new Map<string, number>();
  for (const request of requests) {
    if (!(request.chargedUsd > 0)) continue;
    const text = (request.body as { text?: unknown } | undefined)?.text;
    const tag = typeof text === 'string' ? /g\d+x\d+/.exec(text)?.[0] : undefined;
    if (tag) charged.set(tag, (charged.get(tag) ?? 0) + 1);
  }
  return [...charged].filter(([, times]) => times > 1);
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
