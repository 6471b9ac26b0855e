/**
 * What making a voice message costs Herald besides the paid call: CPU ms to read an Ogg Opus clip's length and
 * waveform (every packet decoded with @discordjs/opus, one RMS point per 100 ms), per second of audio. 20 clips of
 * 20 s (the TTS emulator's longest) per round, user + system CPU (the turns it yields between seconds of audio
 * included), the median of 5 rounds.
 * Run: `npm run bench:voice-message`; prints the figure.
 */
import { encodeTone, writeOggOpus } from '../emulators/tts/ogg.ts';
import { analyseOggOpus } from '../src/voice-message/index.ts';
import { cpuMsSince, median } from './cpu-time.ts';
import { machineOf } from './result-file.ts';

const CLIPS = 20;
const SECONDS = 20;
const ROUNDS = 5;

const packets = encodeTone({ hz: 440, durationMs: SECONDS * 1000, frameMs: 20, channels: 1 });
const clip = Buffer.concat(
  writeOggOpus({ packets, channels: 1, frameSamples: 960, sampleCount: SECONDS * 48_000 }),
);

const perRound: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const before = process.cpuUsage();
  for (let c = 0; c < CLIPS; c++) {
    if ((await analyseOggOpus(clip)).durationSecs !== SECONDS) throw new Error('the clip was misread');
  }
  perRound.push(cpuMsSince(before) / (CLIPS * SECONDS));
}
const machine = machineOf();
console.log(`${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, commit ${machine.commit}`);
console.log(
  `voice message facts: ${median(perRound, 3)} ms of CPU per second of audio (decode + length + waveform; ${CLIPS} clips of ${SECONDS} s, ${clip.length} bytes each, median of ${ROUNDS} rounds)`,
);
