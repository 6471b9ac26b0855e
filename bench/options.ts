/**
 * What `npm run bench` runs and what it returns: its options and presets, the defaults the bench applies, and the
 * shape of its result (the JSON it writes). `bench.ts` runs it.
 */
import { cpus } from 'node:os';
import type { HeldBy } from '../emulators/discord/index.ts';
import type { runBaseline } from './baseline.ts';
import type { RushFigures } from './rush.ts';

/** What to run; {@link QUICK} and {@link FULL} are the two presets. */
export interface BenchOptions {
  /** Concurrent-server steps for P4, in order; the ladder stops at the first step with >1 % late packets. */
  readonly servers: readonly number[];
  /** Cold servers asking at once for P6. */
  readonly coldServers: number;
  /** Seconds of audio each server speaks in P4 and P6. */
  readonly audioSeconds: number;
  /** Repetitions of P1 and P2, and rounds of P3. */
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
   * 3.7 % late (0.88–21.94 %) and glibc 6.6 % (2.25–63.46 %) (docs/performance.md).
   */
  readonly heraldAllocator?: 'jemalloc' | 'glibc';
  /**
   * Run Herald as `npm run start:shards` with this many shard processes (one per core uses the whole machine);
   * unset: one process (`npm start` with `SHARD_COUNT=1`). CPU and memory are then the manager's and its shards' together.
   */
  readonly shards?: number;
  /**
   * Herald's nice value (default {@link HERALD_NICE}). The emulated Discord, its members and the TTS service share
   * this machine with Herald, where on Discord they have machines of their own and take none of its CPU: with
   * Herald ahead of them (below 0) its audio cycle runs when it falls due and they take what it leaves, as the
   * voice receiver (nice −15) is ahead of both; at 0 they compete as equals, and at 1,000 servers on a slow host
   * the world's start-up work made 72–80 % of packets late where Herald at −5 made 9–22 % (docs/performance-log.md,
   * 2026-11-27 evening); at 750, −10 was less late than −5 in four pairs of four (the same log, 2026-11-27 night).
   * Above 0 the world goes first. Setting it below 0 needs root.
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
   * While P4's packets are held, a native reader reads the voice socket in the receiving thread's stead (default
   * true where a C compiler builds emulators/discord/held-reader.c): recvmmsg, 256 datagrams a call, for about 1.4
   * µs of CPU a packet where Node's dgram takes about 8 (at 1,000 streams, 0.3 ms per stream-second of the cores
   * Herald is measured on, which a media server on its own machine does not take), and the kernel times each
   * packet's arrival, however late the reader runs. Its CPU counts as the world's (`voice-receiver`).
   */
  readonly nativeReader?: boolean;
  /**
   * The emulated TTS service runs on a thread of its own (default true), as on Discord it is another company's
   * machines; false: on the emulated Discord's main thread, where its writes to every download (one every 20 ms
   * each) held the gateway, REST and interactions that answer Herald. Its CPU counts as the world's either way.
   */
  readonly ttsThread?: boolean;
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
  /**
   * P4 runs each step once under each of these nice values, in this order, re-nicing every thread of Herald's
   * processes between them (default: only {@link heraldNice}): Herald at the priority an operator runs it (0) and
   * ahead of the emulated world (−10), side by side on the same host, minutes apart (issue 44's two footings).
   */
  readonly p4Nice?: readonly number[];
  /**
   * In P4, the emulated TTS service answers each request with the whole clip at once (one write) instead of paced at
   * 4× real time (default false): a service that synthesises first and sends after, as issue 44's rush has it.
   */
  readonly ttsAtOnce?: boolean;
  /** Where to write Herald's log (warnings and errors) when the run ends. */
  readonly heraldLogFile?: string;
  /** Concurrent streams for the peer baseline's ladder (default: 10, or fewer with fewer servers). */
  readonly baselineSteps?: readonly number[];
  /** Where progress lines go. */
  readonly progress?: (line: string) => void;
}

/**
 * A few minutes on a 2-core machine, Herald as the README recommends running it on one machine: shard processes,
 * twice the cores (`--shards=0` for one process, `npm start` with `SHARD_COUNT=1`). The P4 ladder stops at the first step not held.
 */
export const FULL: BenchOptions = {
  servers: [250, 500, 750, 1000],
  shards: 2 * cpus().length,
  coldServers: 200,
  audioSeconds: 10,
  runs: 10,
  baselineSteps: [10, 20, 40, 80, 160],
};

/** P3's bound (issue 14): each pause within this of the configured one. */
export const P3_TOLERANCE_MS = 20;

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
  /** Voice packets received (speech and the silence frames within and after it), each up to 60 ms of audio. */
  readonly packets: number;
  /** The audio they held, over every server, in seconds (by their RTP timestamps). */
  readonly streamedSeconds: number;
  /**
   * Share of those arriving more than 40 ms after they are due: as long after the stream's first packet arrived as
   * its RTP timestamp is after that packet's (48 per ms).
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
   * the voice server's decryption and capture; the TTS service too with `ttsThread: false`), `tts-service` (the
   * TTS service's own thread), `voice-receiver` (the UDP socket: the receiving thread, and the native reader's
   * process while it holds P4's packets), `dave-members` (the members' MLS clients),
   * `V8 helpers` (garbage collection and compilation threads), `other`.
   */
  readonly worldCpuByThread: Readonly<Record<string, number>>;
  /** p99 event-loop delay of the bench process (the emulated Discord): high values mean the receiver lagged. */
  readonly receiverLoopP99Ms: number;
  /** Herald's nice value during this step (see {@link BenchOptions.p4Nice}), or why it could not be set. */
  readonly heraldNice?: number | string | undefined;
  /**
   * The rush (issue 44): packets, late share and max lateness in every second of the step; the seconds in which a
   * stream started or ended apart from those in which all played; the worst second; `/speak` sent → that server's
   * first packet.
   */
  readonly rush: RushFigures;
  /**
   * The start latency in two: `/speak` sent → that server's synthesis request reached the TTS service (the
   * interaction, the checks, the wait for its turn), and that request → its first packet (the download, the
   * demuxer, the player). Over the servers with both.
   */
  readonly startSplit: {
    readonly toTtsRequestMs: RushFigures['startLatencyMs'];
    readonly ttsRequestToFirstPacketMs: RushFigures['startLatencyMs'];
  };
  /** Who held the step's packets (see {@link BenchOptions.nativeReader}); undefined when none were held. */
  readonly heldBy: HeldBy | undefined;
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
   * Herald's CPU per stream-second while every stream played and none started or ended (`steadyCpuFrom`: 'all
   * playing'), else in the second half of the audio (seconds ⌈S/2⌉ to S-1 of the step): what playing costs, as against
   * `cpuMsPerStreamSecond`, which spreads the whole utterance (its interaction, reservation, download and demuxing)
   * over its audio. Null with under 2 s.
   */
  readonly steadyCpuMsPerStreamSecond: number | null;
  /** Which seconds `steadyCpuMsPerStreamSecond` was read from. */
  readonly steadyCpuFrom?: 'all playing' | 'second half of the audio';
  /**
   * What each utterance cost Herald beyond playing its audio, CPU ms: its interaction, reservation, download,
   * demuxer, player and end (bench/rush.ts `cpuMsPerUtterance`). What a rush of N asks of the cores before the
   * last one plays is about N times this. Null without a steady rate.
   */
  readonly cpuMsPerUtterance: number | null;
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
    readonly worstSecondLatePercent: number;
    readonly startLatencyMs: RushFigures['startLatencyMs'];
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
    /** The native reader of held packets ({@link BenchOptions.nativeReader}): built, off, or why it could not be. */
    readonly nativeReader: string;
    /** Herald's nice value as set (its main process; shard processes inherit it), or why it could not be set. */
    readonly heraldNice: number | string | undefined;
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
  /**
   * P3: silences between three queued utterances, with a TTS that streams at real time, in each of `runs` rounds.
   */
  readonly p3GapsMs: {
    readonly configuredPauseMs: number;
    /**
     * Per round, the silences the listener's decoder renders (reception gaps over 60 ms, silence frames): two
     * pauses when all went well; a silence inside the words (a frame the player had not got in time) adds one.
     */
    readonly rounds: readonly (readonly number[])[];
    /** Rounds not heard as three utterances with two pauses each within ±20 ms of the configured one. */
    readonly roundsOff: number;
    /**
     * The mean silence between two utterances from packet arrival times, over the rounds: the time from the first
     * sounding packet to the last not covered by sounding packets, over the boundaries. Sees gaps too short to
     * render.
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

/** Herald's default nice value in the benchmark (see BenchOptions.heraldNice): ahead of the emulated world. */
export const HERALD_NICE = -10;
/** See {@link BenchOptions.receiverNice}: ahead of every other thread here (setting it below 0 needs root). */
export const RECEIVER_NICE = -15;
/** See {@link BenchOptions.receiverNapMs}: 2 ms, a twentieth of the 40 ms that makes a packet late. */
export const RECEIVER_NAP_MS = 2;
/** See {@link BenchOptions.ttsWriteEveryMs}: at 4× real time, 80 ms of audio (4 pages) a write. */
export const TTS_WRITE_EVERY_MS = 20;
/** A packet more than this behind its slot (20 ms a sequence number from its stream's first) is late: the 40 ms. */
export const LATE_MS = 40;
