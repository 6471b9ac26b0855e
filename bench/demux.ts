/**
 * What reading speech costs Herald per voice frame: CPU µs per Opus packet taken from an AudioResource, as the
 * audio player takes one every 20 ms, through Herald's own pipeline for an Ogg Opus TTS body (ReadAhead →
 * readOggOpusPackets → AudioResource.read), the body already received. 200 streams of 10 s each are read a packet
 * at a time in turn, a turn of the event loop between rounds (packets are demuxed as their reader takes them);
 * user + system CPU, GC included, the median of 5 rounds. Run: `npm run bench:demux`; prints the figure and writes
 * bench/results/demux-<date>-<commit>.json.
 */
import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { encodeTone, writeOggOpus } from '../emulators/tts/ogg.ts';
import { ReadAhead } from '../src/audio/read-ahead.ts';
import { createSpeechResource } from '../src/audio/resource.ts';
import { cpuMsSince, median } from './cpu-time.ts';
import { machineOf, writeResult } from './result-file.ts';

const STREAMS = 200;
const SECONDS = 10;
const ROUNDS = 5;

const tone = encodeTone({ hz: 440, durationMs: SECONDS * 1000, frameMs: 20, channels: 2 });
const body = Buffer.concat(writeOggOpus({ packets: tone, channels: 2, frameSamples: 960 }));

/** CPU µs per packet read from {@link STREAMS} resources over `body`, each read to its end. */
async function round(): Promise<number> {
  const resources = Array.from({ length: STREAMS }, () => {
    const source = new PassThrough();
    source.end(body);
    return createSpeechResource(new ReadAhead(source, { limitBytes: 1 << 20 }), {
      format: 'opus',
      metadata: null,
      trailingSilenceFrames: 0,
    });
  });
  await nextTurn();
  const before = process.cpuUsage();
  let packets = 0;
  for (let reading = STREAMS; reading > 0; await nextTurn()) {
    reading = 0;
    for (const resource of resources) {
      if (resource.ended) continue;
      reading++;
      if (resource.read()) packets++;
    }
  }
  if (packets !== STREAMS * tone.length)
    throw new Error(`read ${packets} packets, not ${STREAMS * tone.length}`);
  return (cpuMsSince(before) * 1000) / packets;
}

const perRound: number[] = [];
for (let i = 0; i < ROUNDS; i++) perRound.push(await round());
const packetUs = median(perRound, 2);
const machine = machineOf();
console.log(`${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, commit ${machine.commit}`);
console.log(
  `reading speech: ${packetUs} µs of CPU per Opus packet (ReadAhead → readOggOpusPackets → AudioResource.read; ${STREAMS} streams of ${SECONDS} s, median of ${ROUNDS} rounds)`,
);
const file = writeResult('demux', new Date().toISOString(), machine, {
  streams: STREAMS,
  seconds: SECONDS,
  rounds: ROUNDS,
  perRound,
  packetUs,
});
console.log(`written to ${file}`);
