/**
 * What playing costs Herald per voice packet, and whether its playing path alone holds N streams on this machine:
 * `--processes=` processes (default 1; 4 as `npm run bench` runs four shards) of `--players=` players each (default
 * 250, one shard's share of 1,000 servers) play at once through @discordjs/voice's own audio cycle, each from
 * Herald's pipeline for an Ogg Opus body (ReadAhead → readOggOpusPackets → AudioResource), each packet built by the
 * library's `createAudioPacket` (patched) with a real DAVE session of its own and XChaCha20-Poly1305, and sent on a
 * connected UDP socket of its own to one sink on loopback. Only the connection is a stand-in: always Ready, no voice
 * gateway, no TTS download, no Discord gateway. Each process first plays a second of speech on every player, untimed (the
 * code compiled, as in a bot that has spoken before).
 *
 * `npm run bench` measures the same path inside a whole emulated world (Discord's gateway and voice server, the TTS
 * service, members) that shares the two cores; this one leaves the machine to the players. The sink, a process of
 * its own, reads as the emulated voice server does (in turns, 2 ms apart when the socket is nearly empty) and times
 * each packet as `npm run bench` does: from its stream's first packet, when its RTP timestamp says (48 per ms);
 * late means more than 40 ms after that. The players send up to `--frames-per-packet=` (default Herald's,
 * DEFAULT_FRAMES_PER_PACKET in src/voice/packet-defaults.ts) 20 ms frames in one packet; 1 is one packet a frame. CPU is each player process's own (user + system, all its threads, GC included), over
 * `--seconds=` (default 10) of audio; `--rounds=` (default 3) runs, the median reported. `--node-flags="..."` gives
 * the player processes V8 flags (none by default, as Herald's); each reports its full collections while playing. Run: `npm run
 * bench:playback [-- --processes=4]`; prints the figures and writes
 * bench/results/playback-<P>x<N>-<F>f[-<flags>]-<date>-<commit>.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { AudioPlayer, NoSubscriberBehavior, VoiceConnectionStatus } from '@discordjs/voice';
import { packetDurationMs } from '../emulators/support/audio.ts';
import { encodeTone, writeOggOpus } from '../emulators/tts/ogg.ts';
import { ReadAhead } from '../src/audio/read-ahead.ts';
import { createSpeechResource } from '../src/audio/resource.ts';
import { DEFAULT_FRAMES_PER_PACKET } from '../src/voice/packet-defaults.ts';
import { cpuMsSince, median } from './cpu-time.ts';
import { LATE_MS } from './options.ts';
import { daveGroup } from './reference-frame.ts';
import { machineOf, writeResult } from './result-file.ts';
import { createAudioPacket, type PacketConnection } from './voice-packet.ts';

const args = process.argv.slice(2);
const flag = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const PROCESSES = Number(flag('processes') ?? 1);
const PLAYERS = Number(flag('players') ?? 250);
const SECONDS = Number(flag('seconds') ?? 10);
const ROUNDS = Number(flag('rounds') ?? 3);
/** V8 flags of the player processes (`--node-flags="--initial-old-space-size=256"`); none by default, as Herald's. */
const NODE_FLAGS = flag('node-flags')?.split(' ').filter(Boolean) ?? [];
const FRAMES = Number(flag('frames-per-packet') ?? DEFAULT_FRAMES_PER_PACKET);

/** What a player process reports when its players are done. */
interface PlayerReport {
  readonly packets: number;
  /** The audio those packets held, in ms. */
  readonly audioMs: number;
  readonly cpuMs: number;
  /** The pause of each full collection while it played. */
  readonly fullCollectionsMs: readonly number[];
}

/** One round's figures, as the JSON keeps them. */
interface RoundFigures {
  readonly usPerPacket: number;
  readonly msPerStreamSecond: number;
  readonly lateShare: number;
  readonly packetsSent: number;
  readonly packetsReceived: number;
  readonly lateBySecond: readonly number[];
  readonly fullCollectionsMs: readonly number[];
}

/** What the sink reports for a round. */
interface SinkReport {
  readonly packets: number;
  readonly late: number;
  readonly streams: number;
  /** Late packets by the second of their own stream they fell in. */
  readonly lateBySecond: readonly number[];
}

const SINK = `
const socket = require('node:dgram').createSocket({ type: 'udp4', recvBufferSize: 4 * 1024 * 1024 });
const LATE_MS = ${LATE_MS};
let streams = new Map(), packets = 0, late = 0, thisTurn = 0, bySecond = [];
socket.on('message', (packet) => {
  const at = performance.now();
  thisTurn++;
  if (packet.length < 12) return;
  packets++;
  const ssrc = packet.readUInt32BE(8), ts = packet.readUInt32BE(4);
  let first = streams.get(ssrc);
  if (!first) streams.set(ssrc, (first = { at, ts }));
  const dueMs = ((ts - first.ts + 2 ** 32) % 2 ** 32) / 48;
  if (at - (first.at + dueMs) > LATE_MS) { late++; const s = Math.floor(dueMs / 1000); bySecond[s] = (bySecond[s] ?? 0) + 1; }
});
const cell = new Int32Array(new SharedArrayBuffer(4));
const nap = () => { if (thisTurn < 32) Atomics.wait(cell, 0, 0, 2); thisTurn = 0; setImmediate(nap); };
socket.bind(0, '127.0.0.1', () => { process.stdout.write(socket.address().port + '\\n'); setImmediate(nap); });
require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
  process.stdout.write(JSON.stringify({ packets, late, streams: streams.size, lateBySecond: Array.from(bySecond, (n) => n ?? 0) }) + '\\n');
  streams = new Map(); packets = 0; late = 0; bySecond = [];
});`;

/** Lines from a child's stdout, one at a time. */
function linesOf(child: ChildProcess): () => Promise<string> {
  if (!child.stdout) throw new Error('the child has no stdout');
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return async () => {
    const next = await lines.next();
    if (next.done) throw new Error('the child ended without an answer');
    return next.value;
  };
}

// Speech-like Opus: mono 20 ms frames of a tone, as the TTS emulator sends them.
const speech = (seconds: number) =>
  Buffer.concat(
    writeOggOpus({
      packets: encodeTone({ hz: 330, durationMs: seconds * 1000, frameMs: 20, channels: 1 }),
      channels: 1,
      frameSamples: 960,
    }),
  );

type DaveSession = ReturnType<typeof daveGroup>['bot'];

/** One player on a stand-in Ready connection that builds and sends real packets; `done` once it went idle. */
function play(body: Buffer, port: number, bot: DaveSession, index: number) {
  const dave = { encrypt: (frame: Buffer) => bot.encryptOpus(frame) };
  const data: PacketConnection = {
    encryptionMode: 'aead_xchacha20_poly1305_rtpsize',
    secretKey: new Uint8Array(Buffer.alloc(32, index & 0xff)),
    nonce: 0,
    nonceBuffer: Buffer.alloc(24),
    sequence: 0,
    timestamp: 0,
    ssrc: index + 1,
  };
  const socket = dgram.createSocket('udp4');
  socket.connect(port, '127.0.0.1');
  let prepared: Buffer | undefined;
  let preparedSamples = 960;
  let sent = 0;
  let audioMs = 0;
  // What @discordjs/voice's VoiceConnection and Networking do with a prepared packet, minus their state machine.
  const connection = {
    state: { status: VoiceConnectionStatus.Ready },
    setSpeaking: () => {},
    prepareAudioPacket: (opus: Buffer) => {
      prepared = createAudioPacket(opus, data, dave);
      preparedSamples = packetDurationMs(opus) * 48;
      return prepared;
    },
    dispatchAudio: () => {
      if (prepared === undefined) return false;
      data.sequence = (data.sequence + 1) & 0xffff;
      data.timestamp = (data.timestamp + preparedSamples) >>> 0;
      socket.send(prepared);
      prepared = undefined;
      sent++;
      audioMs += preparedSamples / 48;
      return true;
    },
  };
  const player = new AudioPlayer({
    behaviors: { noSubscriber: NoSubscriberBehavior.Play, maxFramesPerPacket: FRAMES },
  });
  (player as unknown as { subscribe(c: unknown): void }).subscribe(connection);
  const done = once(player, 'idle');
  const source = new PassThrough();
  source.end(body);
  player.play(
    createSpeechResource(new ReadAhead(source, { limitBytes: 1 << 20 }), { format: 'opus', metadata: null }),
  );
  return { done, sent: () => sent, audioMs: () => audioMs, close: () => socket.close() };
}

/** A player process: makes its groups, says "ready", plays on "go", reports, exits. */
async function runPlayers(port: number, first: number): Promise<void> {
  // @discordjs/voice loads sodium-native asynchronously on import; until then its packets throw.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const body = speech(SECONDS);
  // A DAVE group for each player (an MLS commit and welcome each, about 10 ms), before the timed part.
  const sessions = Array.from({ length: PLAYERS }, () => daveGroup().bot);
  // A second of speech on every player first, untimed, as a bot has played before a burst (the code compiled).
  const warmUp = speech(1);
  const warming = sessions.map((bot, i) => play(warmUp, port, bot, first + i));
  await Promise.all(warming.map((p) => p.done));
  for (const p of warming) p.close();
  // Full collections (mark-compact) while playing: each stops every player in the process.
  const fullCollections: number[] = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)
        fullCollections.push(entry.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  process.stdout.write('ready\n');
  await once(process.stdin, 'data');
  const before = process.cpuUsage();
  const players = sessions.map((bot, i) => play(body, port, bot, first + i));
  await Promise.all(players.map((p) => p.done));
  const report: PlayerReport = {
    packets: players.reduce((sum, p) => sum + p.sent(), 0),
    audioMs: players.reduce((sum, p) => sum + p.audioMs(), 0),
    cpuMs: cpuMsSince(before),
    fullCollectionsMs: fullCollections.map((ms) => Math.round(ms * 10) / 10),
  };
  for (const p of players) p.close();
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exit(0);
}

/** One round: every player process starts at once; returns their reports and the sink's. */
async function round(port: number, askSink: () => Promise<SinkReport>) {
  const children = Array.from({ length: PROCESSES }, (_, i) =>
    spawn(
      process.execPath,
      [...NODE_FLAGS, import.meta.filename, '--child', `--port=${port}`, `--first=${i * PLAYERS}`, ...args],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    ),
  );
  const readers = children.map(linesOf);
  await Promise.all(readers.map((read) => read()));
  await askSink(); // forget anything before the start
  for (const child of children) child.stdin?.write('go\n');
  const reports = (await Promise.all(readers.map((read) => read()))).map(
    (line) => JSON.parse(line) as PlayerReport,
  );
  // The last packets are on their way.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return { reports, sink: await askSink() };
}

async function main(): Promise<void> {
  const sinkProcess = spawn(process.execPath, ['-e', SINK], { stdio: ['pipe', 'pipe', 'inherit'] });
  const readSink = linesOf(sinkProcess);
  const port = Number(await readSink());
  const askSink = async (): Promise<SinkReport> => {
    sinkProcess.stdin.write('report\n');
    return JSON.parse(await readSink()) as SinkReport;
  };
  const rounds: RoundFigures[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const { reports, sink } = await round(port, askSink);
    const packets = reports.reduce((sum, report) => sum + report.packets, 0);
    const cpuMs = reports.reduce((sum, report) => sum + report.cpuMs, 0);
    const audioMs = reports.reduce((sum, report) => sum + report.audioMs, 0);
    const figures: RoundFigures = {
      usPerPacket: Math.round(((cpuMs * 1000) / packets) * 100) / 100,
      msPerStreamSecond: Math.round((cpuMs / (audioMs / 1000)) * 1000) / 1000,
      lateShare: Math.round((sink.late / Math.max(1, sink.packets)) * 1e5) / 1e5,
      packetsSent: packets,
      packetsReceived: sink.packets,
      lateBySecond: sink.lateBySecond,
      fullCollectionsMs: reports.flatMap((report) => report.fullCollectionsMs),
    };
    rounds.push(figures);
    console.error(
      `round ${r + 1}: ${figures.usPerPacket} µs per packet, ${figures.msPerStreamSecond} ms per stream-second, ${(figures.lateShare * 100).toFixed(2)} % late (${sink.packets} of ${packets} received, ${sink.streams} streams; late by second of their stream: ${sink.lateBySecond.join(' ')}; ${figures.fullCollectionsMs.length} full collections, longest ${Math.max(0, ...figures.fullCollectionsMs)} ms)`,
    );
  }
  sinkProcess.kill();

  const machine = machineOf();
  const usPerPacket = median(
    rounds.map((r) => r.usPerPacket),
    2,
  );
  const lateShare = median(
    rounds.map((r) => r.lateShare),
    5,
  );
  const streams = PROCESSES * PLAYERS;
  const msPerStreamSecond = median(
    rounds.map((r) => r.msPerStreamSecond),
    3,
  );
  console.log(`${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, commit ${machine.commit}`);
  console.log(
    `player processes' V8 flags: ${NODE_FLAGS.join(' ') || 'none'}; up to ${FRAMES} frames a packet`,
  );
  console.log(
    `playing ${streams} streams (${PROCESSES} process${PROCESSES === 1 ? '' : 'es'} × ${PLAYERS} players, ${SECONDS} s each, median of ${ROUNDS} rounds): ${usPerPacket} µs of CPU per voice packet (${msPerStreamSecond} ms per stream-second), ${(lateShare * 100).toFixed(2)} % of packets > ${LATE_MS} ms late; by round ${rounds.map((r) => `${r.usPerPacket} µs / ${(r.lateShare * 100).toFixed(2)} %`).join(', ')}`,
  );
  const figures = {
    processes: PROCESSES,
    players: PLAYERS,
    seconds: SECONDS,
    nodeFlags: NODE_FLAGS,
    framesPerPacket: FRAMES,
    rounds,
    usPerPacket,
    msPerStreamSecond,
    lateShare,
  };
  // --no-write (the smoke test): the figures as one JSON line rather than a result file.
  if (args.includes('--no-write')) {
    console.log(JSON.stringify(figures));
    return;
  }
  const flags =
    NODE_FLAGS.length === 0
      ? ''
      : `-${NODE_FLAGS.join('-')
          .replace(/[^a-z0-9=]+/gi, '-')
          .replace(/^-+/, '')}`;
  const file = writeResult(
    `playback-${PROCESSES}x${PLAYERS}-${FRAMES}f${flags}`,
    new Date().toISOString(),
    machine,
    figures,
  );
  console.log(`written to ${file}`);
}

if (args.includes('--child')) await runPlayers(Number(flag('port')), Number(flag('first')));
else await main();
