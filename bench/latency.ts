/**
 * Benchmark: how soon a member hears Herald. For /speak, the time from the interaction being sent to the first
 * voice packet arriving at the voice server, cold (Herald joins the channel first) under DAVE and with DAVE
 * declined, run alternately in the same process so both see the same machine load; then, under DAVE, warm
 * (already in voice) and the silence between queued utterances. Under DAVE the first packet is one the members
 * decrypt: Herald waits for the DAVE transition before playing. Each cold DAVE run is broken down into the
 * steps of the handshake (gateway events, the members' MLS work, Herald's wait at its E2EE gate). Prints a table
 * and writes bench/results/latency-<date>-<commit>.json. Run: `RUNS=15 npm run bench:latency` (loopback only;
 * emulators and Herald in this process, the members' DAVE clients in worker threads, as on their own machines).
 * Then the same cold pair with Herald as its own process (bench/dave-cost.ts), as it runs against Discord.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { EventLoopUtilization } from 'node:perf_hooks';
import type { DaveEvent } from '../emulators/discord/index.ts';
import { createWorld, type World } from '../test/e2e/harness.ts';
import { measureDaveCost } from './dave-cost.ts';

const RUNS = Number(process.env.RUNS ?? 15);
const round = (n: number): number => Math.round(n * 10) / 10;
const quantile = (values: readonly number[], q: number): number => {
  const sorted = [...values].filter(Number.isFinite).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};
const summary = (values: readonly number[]) => ({
  medianMs: round(quantile(values, 0.5)),
  minMs: round(quantile(values, 0)),
  p90Ms: round(quantile(values, 0.9)),
  n: values.length,
});
const describe = (values: readonly number[]): string => {
  const s = summary(values);
  return `median ${s.medianMs.toFixed(1)} ms, min ${s.minMs.toFixed(1)} ms, p90 ${s.p90Ms.toFixed(1)} ms (n=${s.n})`;
};

/** Lets the previous run's leave finish (the members' group re-keys without Herald) before the next cold join. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

/** One cold DAVE run, step by step (ms); NaN where a step did not happen. */
interface Breakdown {
  /** /speak sent → session description (op 4): the join, as with DAVE declined. */
  join: number;
  /** op 4 → Herald's key package (op 26) received. */
  keyPackage: number;
  /** op 26 → Add proposals sent to the members (the gateway signs one proposal). */
  propose: number;
  /** Proposals → the winning member's commit and welcome received (a member's MLS work, off Herald's thread). */
  memberCommit: number;
  /** Commit → Herald's ready for transition (op 23): Herald processes the welcome. */
  heraldWelcome: number;
  /** Commit → the last member's op 23 (members process the commit). */
  membersReady: number;
  /** op 4 → execute transition (op 22): the whole DAVE handshake. */
  handshake: number;
  /** op 22 → first packet: Herald's gate opens, the player prepares a frame and sends it on the next 20 ms tick. */
  play: number;
  /** Herald's own figure: how long the utterance waited at the E2EE gate (its log). */
  gateWait: number;
  /** The members' MLS operations during the handshake, summed (worker threads). */
  membersMls: number;
  /** How long the main thread (Herald, the emulators' gateways, the TTS emulator) was busy during the handshake. */
  mainBusy: number;
}

const firstFrameAt = (world: World): number =>
  world.discord.voice(world.guild).frames.find((f) => !f.silence)?.receivedAt ?? Number.NaN;

/** One cold /speak: returns the slash time, and the first packet's arrival time. */
async function coldRun(world: World, i: number): Promise<{ start: number; first: number }> {
  const capture = world.discord.voice(world.guild);
  capture.clear();
  const start = performance.now();
  const reply = world.discord.slash(world.member, 'speak', { text: `Cold start number ${i}.` });
  await capture.untilFrames(1);
  const first = firstFrameAt(world);
  await reply;
  await capture.untilSilent({ quietMs: 300 });
  await world.discord.slash(world.member, 'leave');
  await capture.untilDisconnected();
  return { start, first };
}

function breakdown(
  events: readonly DaveEvent[],
  bot: string,
  start: number,
  first: number,
  gate: number,
  mainBusy: number,
) {
  const after = (kind: DaveEvent['kind'], from: number, o: { user?: string; notUser?: string } = {}) =>
    events.find(
      (e) =>
        e.at >= from &&
        e.kind === kind &&
        (o.user === undefined || e.userId === o.user) &&
        (o.notUser === undefined || e.userId !== o.notUser),
    )?.at ?? Number.NaN;
  const session = after('session', start, { user: bot });
  const keyPackage = after('key-package', session, { user: bot });
  const proposals = after('proposals', keyPackage);
  const commit = after('commit', proposals);
  const heraldReady = after('ready', commit, { user: bot });
  const execute = after('execute', commit);
  const membersReady = Math.max(
    ...events
      .filter((e) => e.kind === 'ready' && e.at >= commit && e.at <= execute && e.userId !== bot)
      .map((e) => e.at),
  );
  const membersMls = events
    .filter((e) => e.kind === 'mls' && e.at >= session && e.at <= execute)
    .reduce((sum, e) => sum + (e.ms ?? 0), 0);
  const b: Breakdown = {
    join: session - start,
    keyPackage: keyPackage - session,
    propose: proposals - keyPackage,
    memberCommit: commit - proposals,
    heraldWelcome: heraldReady - commit,
    membersReady: membersReady - commit,
    handshake: execute - session,
    play: first - execute,
    gateWait: gate,
    membersMls,
    mainBusy,
  };
  return b;
}

/** The last `e2ee gate` line Herald logged since `from` lines: how long the utterance waited, in ms. */
function gateWaitSince(world: World, from: number): number {
  for (const line of world.logs.slice(from).reverse()) {
    if (!line.includes('e2ee gate')) continue;
    try {
      return Number((JSON.parse(line) as { waitedMs?: number }).waitedMs);
    } catch {
      return Number.NaN;
    }
  }
  return Number.NaN;
}

const recorder = {
  events: [] as DaveEvent[],
  elu: undefined as EventLoopUtilization | undefined,
  busyMs: Number.NaN,
};
const loadAtStart = loadavg().map((n) => Math.round(n * 100) / 100);
const dave = await createWorld({
  tts: { speed: 8 },
  discord: {
    onDaveEvent: (event) => {
      recorder.events.push(event);
      // The main thread's busy time over the handshake: from the bot's op 4 to its op 22.
      if (event.kind === 'session') recorder.elu = performance.eventLoopUtilization();
      if (event.kind === 'execute' && recorder.elu) {
        recorder.busyMs = performance.eventLoopUtilization(recorder.elu).active;
        recorder.elu = undefined;
      }
    },
  },
});
const declinedEvents: DaveEvent[] = [];
const declined = await createWorld({
  tts: { speed: 8 },
  discord: { dave: false, onDaveEvent: (event) => declinedEvents.push(event) },
});
const bot = dave.herald().client.user?.id ?? '';
const cold: number[] = [];
const coldDeclined: number[] = [];
/** Declined: /speak → op 4, and op 4 → first packet. */
const declinedSteps: { join: number; play: number }[] = [];
const steps: Breakdown[] = [];
const warm: number[] = [];
let firstFramesE2ee = 0;
let gaps: number[] = [];
let pacing = { meanMs: Number.NaN, p99Ms: Number.NaN };

try {
  for (let i = 0; i < RUNS; i++) {
    // Alternate, so that both modes see the same machine load.
    recorder.events.length = 0;
    recorder.busyMs = Number.NaN;
    const logFrom = dave.logs.length;
    const run = await coldRun(dave, i);
    cold.push(run.first - run.start);
    if (dave.discord.voice(dave.guild).frames.find((f) => !f.silence)?.e2ee) firstFramesE2ee += 1;
    steps.push(
      breakdown(recorder.events, bot, run.start, run.first, gateWaitSince(dave, logFrom), recorder.busyMs),
    );
    await settle();

    declinedEvents.length = 0;
    const plain = await coldRun(declined, i);
    coldDeclined.push(plain.first - plain.start);
    const session = declinedEvents.find((e) => e.kind === 'session' && e.at >= plain.start)?.at ?? Number.NaN;
    declinedSteps.push({ join: session - plain.start, play: plain.first - session });
    await settle();
  }

  const capture = dave.discord.voice(dave.guild);
  for (let i = 0; i < RUNS; i++) {
    if (i === 0) {
      await dave.discord.slash(dave.member, 'join');
      await capture.untilConnected();
    }
    capture.clear();
    const start = performance.now();
    await Promise.all([
      dave.discord.slash(dave.member, 'speak', { text: `Warm number ${i}.` }),
      capture.untilFrames(1),
    ]);
    warm.push(firstFrameAt(dave) - start);
    await capture.untilSilent({ quietMs: 300 });
  }
  capture.clear();
  for (const text of ['First of three.', 'Second of three.', 'Third of three.']) {
    await dave.discord.slash(dave.member, 'speak', { text });
  }
  const heard = await capture.untilSilent({ quietMs: 800 });
  gaps = heard.gapsMs;
  pacing = heard.intervals;
} finally {
  await Promise.all([dave.close(), declined.close()]);
}
// The same cold pair with Herald in a process of its own, as on Discord (see bench/dave-cost.ts).
console.log(
  `cold /speak with Herald as its own process (npm start), DAVE and declined alternately, ${RUNS} runs each:`,
);
const apart = await measureDaveCost(RUNS, () => {});
const apartDifference = round(quantile(apart.dave, 0.5) - quantile(apart.declined, 0.5));
const apartPaired = round(
  quantile(
    apart.dave.map((ms, i) => ms - (apart.declined[i] ?? Number.NaN)),
    0.5,
  ),
);
const loadAtEnd = loadavg().map((n) => Math.round(n * 100) / 100);

const medianOf = (key: keyof Breakdown): number =>
  round(
    quantile(
      steps.map((s) => s[key]),
      0.5,
    ),
  );
const difference = round(quantile(cold, 0.5) - quantile(coldDeclined, 0.5));
// Run i of each mode ran back to back, under nearly the same load: the median of their differences is steadier.
const paired = round(
  quantile(
    cold.map((ms, i) => ms - (coldDeclined[i] ?? Number.NaN)),
    0.5,
  ),
);
console.log(`/speak → first voice packet, cold under DAVE (join + speak): ${describe(cold)}`);
console.log(`/speak → first voice packet, cold, DAVE declined:            ${describe(coldDeclined)}`);
console.log(
  `  DAVE costs ${difference.toFixed(1)} ms at the median; median of the paired runs' differences ${paired.toFixed(1)} ms (issue 11: within 30 ms)`,
);
console.log(`  first packets end-to-end encrypted: ${firstFramesE2ee}/${cold.length}`);
console.log('  cold under DAVE, step by step (medians; the steps overlap where noted):');
const rows: [keyof Breakdown, string][] = [
  ['join', '/speak → session description (op 4), as without DAVE'],
  ['keyPackage', 'op 4 → Herald’s key package (op 26)'],
  ['propose', 'op 26 → Add proposals sent (gateway signs)'],
  ['memberCommit', 'proposals → winning member’s commit (member MLS, worker)'],
  ['heraldWelcome', 'commit → Herald’s op 23 (Herald processes the welcome)'],
  ['membersReady', 'commit → last member’s op 23 (members process the commit)'],
  ['handshake', 'op 4 → execute transition (op 22): the DAVE handshake'],
  ['play', 'op 22 → first packet (gate opens, player’s first 20 ms tick)'],
  ['gateWait', 'Herald’s wait at its E2EE gate (from its log)'],
  ['membersMls', 'members’ MLS work during the handshake (worker threads)'],
  ['mainBusy', 'main thread busy during the handshake (Herald + emulators)'],
];
for (const [key, label] of rows) console.log(`    ${label.padEnd(62)} ${medianOf(key).toFixed(1)} ms`);
const declinedMedian = (key: 'join' | 'play'): number =>
  round(
    quantile(
      declinedSteps.map((s) => s[key]),
      0.5,
    ),
  );
console.log(
  `  cold, DAVE declined: /speak → op 4 ${declinedMedian('join').toFixed(1)} ms, op 4 → first packet ${declinedMedian('play').toFixed(1)} ms`,
);
console.log(`Herald as its own process: cold under DAVE ${describe(apart.dave)}`);
console.log(`Herald as its own process: cold, DAVE declined ${describe(apart.declined)}`);
console.log(
  `  DAVE costs ${apartDifference.toFixed(1)} ms at the median; median of the paired runs' differences ${apartPaired.toFixed(1)} ms; first packets E2EE ${apart.firstPacketsE2ee}/${apart.dave.length}`,
);
console.log(`/speak → first voice packet, warm under DAVE (in voice):     ${describe(warm)}`);
console.log(`silence between queued utterances: ${gaps.map((gap) => `${gap.toFixed(0)} ms`).join(', ')}`);
console.log(`packet pacing: mean ${pacing.meanMs.toFixed(2)} ms, p99 ${pacing.p99Ms.toFixed(2)} ms`);
console.log(`load average: ${loadAtStart.join(' ')} at start, ${loadAtEnd.join(' ')} at end`);

const commit = (() => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
})();
const startedAt = new Date().toISOString();
const resultsDir = join(import.meta.dirname, 'results');
mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `latency-${startedAt.slice(0, 10)}-${commit}.json`);
const result = {
  startedAt,
  command: `RUNS=${RUNS} npm run bench:latency`,
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '', node: process.version, commit },
  loadAverageAtStart: loadAtStart,
  loadAverageAtEnd: loadAtEnd,
  coldDave: { ...summary(cold), runsMs: cold.map(round) },
  coldDeclined: { ...summary(coldDeclined), runsMs: coldDeclined.map(round) },
  daveCostMedianMs: difference,
  daveCostPairedMedianMs: paired,
  firstPacketsE2ee: firstFramesE2ee,
  breakdownMedianMs: Object.fromEntries(rows.map(([key]) => [key, medianOf(key)])),
  declinedBreakdownMedianMs: { join: declinedMedian('join'), play: declinedMedian('play') },
  breakdownRuns: steps.map((s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, round(v)]))),
  heraldProcess: {
    coldDave: { ...summary(apart.dave), runsMs: apart.dave.map(round) },
    coldDeclined: { ...summary(apart.declined), runsMs: apart.declined.map(round) },
    daveCostMedianMs: apartDifference,
    daveCostPairedMedianMs: apartPaired,
    firstPacketsE2ee: apart.firstPacketsE2ee,
  },
  warmDave: { ...summary(warm), runsMs: warm.map(round) },
  gapsMs: gaps.map(round),
  pacing,
};
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote ${file}`);
