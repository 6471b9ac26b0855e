/**
 * `npm run bench`: every figure of issue 14 in one run, printed as a table and written to
 * bench/results/<date>T<time>-<commit>-<one-process or N-shards>.json. `npm run bench -- --quick` runs at tiny scale (seconds, for a loaded
 * development machine); `--servers=50,100` overrides the P4 ladder, `--all-steps` climbs it past the first step
 * with >1 % late packets, `--cold=N` sets the P6 burst, `--baseline=10,20` the peer baseline's ladder, `--pause=MS` Herald's UTTERANCE_PAUSE_MS (P3), `--shards=N` runs Herald as N shard processes (npm run start:shards; by default twice the cores, or one process with `--quick`; `--shards=0`: one process, as npm start with SHARD_COUNT=1), `--nice=N` runs Herald at that nice value (default -10: ahead of the emulated world, which on Discord is other machines; 0: as equals; above 0 the world goes first; `--nice=0,-10` runs each P4 step under each, side by side), `--tts=at-once` has the emulated TTS service answer P4 with the whole clip at once (by default paced at 4× real time), `--cache=on` runs Herald with its audio cache (off by default), `--scheduler=off` turns Herald's rush scheduler off (a diagnostic: HERALD_RUSH_SCHEDULER=off), `--results=DIR` writes the result file (and profiles) there instead of bench/results, `--receiver-nice=N` sets the voice receiver thread's (default -15), `--receiver-nap=MS` has it read the socket every MS while traffic is light in P4 (default 2; 0: it wakes for each packet), `--receiver-hold=off` has it hand P4's packets to the emulator's main thread as they come (by default it holds them, timed on arrival, until the step is over), `--receiver-native=off` has that thread hold them itself rather than a native reader built from emulators/discord/held-reader.c (by default where a C compiler is), `--speak-spread=MS` (a diagnostic) sends P4's `/speak` evenly over MS rather than at the same moment, `--repeat=N` runs each P4 step N times and reports its median run, `--malloc=jemalloc|glibc` the memory allocator Herald runs on (default jemalloc when installed, preloaded as the container image does), `--dave=off` has the emulated Discord decline DAVE (to show its cost; by default every figure is under it), `--tts-thread=off` runs the emulated TTS service on the emulated Discord's main thread (by default it has a thread of its own), `--tts-write-every=MS` how often at most the emulated TTS service writes in P4 and P6 (default 20; 0: every Ogg page alone, as in P1–P3), `--seconds=S` the audio per server, `--herald-log=FILE` keeps Herald's log (`--log-level=info|debug` for more than warnings), `--node-flags="..."` passes Node/V8 flags to Herald's process, `--cpu-prof` writes
 * V8 CPU profiles of Herald to bench/results/profiles (summarise with bench/profile-summary.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HeldBy } from '../emulators/discord/index.ts';
import { findJemalloc } from '../src/ops/index.ts';
import { runBench } from './bench.ts';
import {
  type BenchOptions,
  type BenchResult,
  FULL,
  HERALD_NICE,
  P3_TOLERANCE_MS,
  QUICK,
  RECEIVER_NAP_MS,
  TTS_WRITE_EVERY_MS,
} from './options.ts';
import { rushLine, secondsTable, splitLine } from './rush.ts';

const args = process.argv.slice(2);
const flag = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const base = args.includes('--quick') ? QUICK : FULL;
// --results=DIR: where the result file (and --cpu-prof's profiles) go; by default bench/results.
const resultsDir = flag('results') ?? join(import.meta.dirname, 'results');
const options: BenchOptions = {
  ...base,
  ...(flag('servers') ? { servers: (flag('servers') ?? '').split(',').map(Number) } : {}),
  ...(flag('cold') ? { coldServers: Number(flag('cold')) } : {}),
  ...(flag('baseline') ? { baselineSteps: (flag('baseline') ?? '').split(',').map(Number) } : {}),
  ...(flag('seconds') ? { audioSeconds: Number(flag('seconds')) } : {}),
  ...(args.includes('--all-steps') ? { allSteps: true } : {}),
  heraldEnv: {
    ...(flag('pause') ? { UTTERANCE_PAUSE_MS: flag('pause') ?? '' } : {}),
    ...(flag('frames-per-packet') ? { VOICE_FRAMES_PER_PACKET: flag('frames-per-packet') ?? '' } : {}),
    ...(flag('log-level') ? { LOG_LEVEL: flag('log-level') ?? '' } : {}),
    // --cache=on: Herald with its audio cache (off in the bench by default, as in the e2e harness), every utterance
    // short enough to be stored: P4's starts are then cache misses and its ends cache writes.
    ...(flag('cache') === 'on' ? { AUDIO_CACHE_MB: '256', AUDIO_CACHE_MAX_CHARS: '2000' } : {}),
    ...(flag('scheduler') === 'off' ? { HERALD_RUSH_SCHEDULER: 'off' } : {}),
  },
  ...(flag('shards') ? { shards: Number(flag('shards')) } : {}),
  // --malloc=jemalloc|glibc; by default jemalloc when it is installed, as the container image runs Herald.
  heraldAllocator:
    flag('malloc') === 'glibc' || (flag('malloc') === undefined && !findJemalloc()) ? 'glibc' : 'jemalloc',
  // --nice=0,-10: Herald starts at the first; P4 runs each step under each, side by side.
  ...(flag('nice') ? { heraldNice: Number(flag('nice')?.split(',')[0]) } : {}),
  ...((flag('nice')?.split(',').length ?? 0) > 1
    ? { p4Nice: (flag('nice') ?? '').split(',').map(Number) }
    : {}),
  ...(flag('tts') === 'at-once' ? { ttsAtOnce: true } : {}),
  ...(flag('receiver-nice') ? { receiverNice: Number(flag('receiver-nice')) } : {}),
  ...(flag('receiver-nap') ? { receiverNapMs: Number(flag('receiver-nap')) } : {}),
  ...(flag('receiver-hold') === 'off' ? { holdPackets: false } : {}),
  ...(flag('receiver-native') === 'off' ? { nativeReader: false } : {}),
  ...(flag('tts-thread') === 'off' ? { ttsThread: false } : {}),
  ...(flag('speak-spread') ? { speakSpreadMs: Number(flag('speak-spread')) } : {}),
  ...(flag('tts-write-every') ? { ttsWriteEveryMs: Number(flag('tts-write-every')) } : {}),
  ...(flag('dave') === 'off' ? { dave: false } : {}),
  ...(flag('repeat') ? { repeats: Number(flag('repeat')) } : {}),
  ...(flag('herald-log') ? { heraldLogFile: flag('herald-log') ?? '' } : {}),
  heraldNodeFlags: [
    ...(args.includes('--cpu-prof') ? ['--cpu-prof', `--cpu-prof-dir=${join(resultsDir, 'profiles')}`] : []),
    // --node-flags="--trace-gc --max-semi-space-size=32": V8 and Node flags for Herald's process, as given; a
    // module preloaded by a relative path (--import=./bench/sqlite-calls.ts) is found from here, not from the
    // temporary folder Herald runs in.
    ...(flag('node-flags')
      ?.split(' ')
      .filter(Boolean)
      .map((given) =>
        given.replace(/^(--import=|--require=)(\.\.?\/.*)$/, (_, name, path) => name + resolve(path)),
      ) ?? []),
  ],
  progress: (line) => console.error(`bench: ${line}`),
};

const result = await runBench(options);
console.log(formatTable(result));
mkdirSync(resultsDir, { recursive: true });
const mode = options.shards ? `${options.shards}-shards` : 'one-process';
// The start time (UTC, to the minute) too: several runs at one commit each keep their file.
const started = result.startedAt.slice(0, 16).replace(':', '');
const file = join(resultsDir, `${started}-${result.machine.commit}-${mode}.json`);
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(`\nwritten to ${file}`);

function formatTable(r: BenchResult): string {
  const m = r.machine;
  const ms = (s: { median: number; p95: number; n: number }) =>
    `median ${s.median} ms, p95 ${s.p95} ms (n=${s.n})`;
  const rows: [string, string][] = [
    ['machine', `${m.cpus} × ${m.cpuModel}, ${m.memoryGb} GB, Node ${m.node}, commit ${m.commit}`],
    ['load average', `${m.loadAverageAtStart.join(' ')} at start, ${m.loadAverageAtEnd.join(' ')} at end`],
    [
      'host speed',
      `${m.referenceFrameUs.atStart} µs at start, ${m.referenceFrameUs.atEnd} µs at end per reference voice frame (DAVE and transport encryption, one core; lower is faster)`,
    ],
    [
      'DAVE',
      r.options.dave === false
        ? 'declined by the emulated Discord (transport encryption only)'
        : 'offered and used (end-to-end encrypted, as Discord requires)',
    ],
    [
      'voice receiver thread',
      `nice ${m.receiverNice ?? 'as the bench process'}; ${napLine(r.options.receiverNapMs ?? RECEIVER_NAP_MS)}; ${
        r.options.holdPackets === false
          ? 'hands P4’s packets to the emulator’s main thread as they come'
          : `holds P4’s packets, timed on arrival, until the step’s streams are over; ${
              m.nativeReader === 'built'
                ? 'a native reader (recvmmsg, kernel arrival times) reads them in its stead'
                : `read by the thread itself (native reader ${m.nativeReader})`
            }`
      }`,
    ],
    [
      'emulated TTS service',
      r.options.ttsThread === false
        ? 'on the emulated Discord’s main thread'
        : 'on a thread of its own (on Discord it is other machines)',
    ],
    ...(r.options.speakSpreadMs
      ? [
          [
            'P4 members',
            `/speak spread evenly over ${r.options.speakSpreadMs} ms (a diagnostic: not at the same moment)`,
          ] as [string, string],
        ]
      : []),
    [
      'TTS service (emulated)',
      `4× real time; P1–P3 each page as it falls due, ${r.options.ttsAtOnce ? 'P4 the whole clip at once (one write), P6' : 'P4 and P6'} a write at most every ${r.options.ttsWriteEveryMs ?? TTS_WRITE_EVERY_MS} ms`,
    ],
    [
      'Herald',
      `${r.options.shards ? `${r.options.shards} shard processes (npm run start:shards)` : 'one process (npm start)'}, nice ${r.machine.heraldNice ?? r.options.heraldNice ?? HERALD_NICE} at start (ahead of the emulated world below 0)${r.options.p4Nice ? `, P4 under each of nice ${r.options.p4Nice.join(', ')}` : ''}; audio cache ${r.options.heraldEnv?.AUDIO_CACHE_MB ? 'on' : 'off'}; ${r.options.heraldEnv?.HERALD_RUSH_SCHEDULER === 'off' ? 'rush scheduler off (a diagnostic)' : 'rush scheduler on'}; memory allocator ${r.machine.heraldAllocators.join(', ')}${
        r.options.heraldAllocator === 'jemalloc' ? ' (preloaded, as in the container image)' : ''
      }`,
    ],
    ['P1 TTS first byte → first voice packet', ms(r.p1TtsToFirstPacketMs)],
    ['P2 /speak → first voice packet, cold', ms(r.p2SpeakToFirstPacketMs.cold)],
    ['P2 /speak → first voice packet, warm', ms(r.p2SpeakToFirstPacketMs.warm)],
    ['P3 gaps between queued utterances', p3Line(r.p3GapsMs)],
    ...r.p4Concurrency.flatMap((s): [string, string][] => [
      [
        `P4 ${s.servers} servers, nice ${s.heraldNice ?? '?'}: the rush`,
        `${rushLine(s.rush)}; ${splitLine(s.startSplit)}`,
      ],
      ...secondsTable(s.rush.bySecond).map((line): [string, string] => ['', line]),
    ]),
    ...r.p4Concurrency.map((s): [string, string] => [
      `P4 ${s.servers} servers at once, nice ${s.heraldNice ?? '?'}`,
      `${s.runs ? `median of ${s.runs.length} runs (${s.runs.map((run) => `${(run.lateShare * 100).toFixed(2)} %`).join(', ')} late): ` : ''}${(s.lateShare * 100).toFixed(2)} % packets >40 ms late (${s.packets}; lateness p50 ${s.lateness.p50}, p90 ${s.lateness.p90}, p99 ${s.lateness.p99}, max ${s.lateness.max} ms; ${s.serversLate} servers >1 % late), ${s.lostPackets} lost (${s.receiveBufferDrops} dropped by the receiving kernel), ${s.rejectedPackets} failing authentication, ${s.silentServers} servers heard nothing, ${s.unanswered} /speak unanswered in 3 s, answers read after p50 ${s.answerMs.p50}, p90 ${s.answerMs.p90}, max ${s.answerMs.max} ms, ${s.cpuMsPerStreamSecond} ms CPU/stream-s (the emulated world ${s.worldCpuMsPerStreamSecond}: ${Object.entries(
        s.worldCpuByThread,
      )
        .map(([name, ms]) => `${name} ${ms}`)
        .join(
          ', ',
        )}; Herald playing (${s.steadyCpuFrom ?? 'second half of the audio'}): ${s.steadyCpuMsPerStreamSecond ?? 'n/a'}; Herald's CPU per utterance beyond playing ${s.cpuMsPerUtterance ?? 'n/a'} ms; Herald's page faults per stream-s ${s.pageFaultsPerStreamSecond}), RSS ${s.rssMb} MB, receiver loop p99 ${s.receiverLoopP99Ms} ms${heldLine(s.heldBy)}; late packets by second ${s.bySecond.late.join(' ')} (by second of their stream ${s.bySecond.lateInStream.join(' ')}), Herald's CPU ms by second ${s.bySecond.heraldCpuMs.join(' ')}, the world's ${s.bySecond.worldCpuMs.join(' ')}`,
    ]),
    ['P4 most servers held (≤1 % late, all heard, all answered)', String(r.p4MaxServers)],
    [
      'P5 memory',
      `idle ${r.p5Memory.idleRssMb} MB; ${r.p5Memory.perConnectionKb} KB per voice connection (${r.p5Memory.connections})`,
    ],
    [
      `P6 ${r.p6ColdBurst.servers} cold servers at once`,
      `${r.p6ColdBurst.heard} heard (last after ${r.p6ColdBurst.lastHeardAfterMs} ms); told: ${r.p6ColdBurst.toldSpeakingNow} "Speaking now", ${r.p6ColdBurst.toldJoining} "joining", ${r.p6ColdBurst.toldCouldNotConnect} "could not connect" (${r.p6ColdBurst.toldSpeakingThenCouldNotConnect} after "Speaking now"); paid $${r.p6ColdBurst.paidUsd}, unheard $${r.p6ColdBurst.paidUnheardUsd}; ${r.p6ColdBurst.neitherCount} neither heard nor told`,
    ],
    ...r.p6ColdBurst.neither.map((member): [string, string] => [
      `P6 neither: ${member.server}`,
      `reply "${member.reply}"; said ${member.said.length === 0 ? 'nothing' : member.said.map((line) => `"${line}"`).join(', ')}`,
    ]),
    ...(r.baseline.ran
      ? r.baseline.steps.map((step): [string, string] => [
          `baseline ${step.streams} streams at once`,
          `${(step.lateShare * 100).toFixed(2)} % frames >40 ms late, first frame median ${step.firstFrameMedianMs} ms, ${step.cpuMsPerStreamSecond} ms CPU/stream-s`,
        ])
      : []),
    [
      'baseline (whole clip, FFmpeg, prism-media)',
      r.baseline.ran
        ? `most streams held (≤1 % late): ${r.baseline.maxStreamsHeld}`
        : `skipped: ${r.baseline.reason}`,
    ],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  return rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
}

/** P3's rounds, each pattern of rendered silences once with how many rounds heard it. */
function p3Line(p3: BenchResult['p3GapsMs']): string {
  const patterns = new Map<string, number>();
  for (const gaps of p3.rounds) {
    const key = gaps.length > 0 ? `${gaps.join(', ')} ms` : 'none';
    patterns.set(key, (patterns.get(key) ?? 0) + 1);
  }
  const heard = [...patterns].map(([key, n]) => `${key} in ${n}`).join('; ');
  return `${p3.rounds.length - p3.roundsOff} of ${p3.rounds.length} rounds as configured (${p3.configuredPauseMs} ms ±${P3_TOLERANCE_MS}, TTS at real time); rendered silences ${heard}; mean ${p3.meanGapMs} ms from packet times`;
}

/** Who held a P4 step's packets, when it was not the reader the header names (a native reader that did not start). */
function heldLine(heldBy: HeldBy | undefined): string {
  if (heldBy?.by !== 'thread' || heldBy.nativeUnavailable === undefined) return '';
  return `, packets held by the receiving thread (native reader: ${heldBy.nativeUnavailable})`;
}

function napLine(ms: number): string {
  return ms > 0
    ? `in P4 reads its socket every ${ms} ms while traffic is light (arrival times up to ${ms} ms late, against Herald)`
    : 'wakes for each packet';
}
