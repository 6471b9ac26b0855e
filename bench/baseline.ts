/**
 * The peer-style baseline most TTS bots use: download the whole clip, then decode it with FFmpeg through
 * prism-media and encode it again to Opus, paced at real time as a player would. Run in this process against the
 * same TTS emulator, so its figures sit beside Herald's in the same run: a ladder of concurrent streams like P4's
 * (the most held with at most 1 % of frames late), first-frame latency and CPU per stream-second. It stops short
 * of the network (no encryption, no UDP send), so its figures flatter it. Skipped, with the reason, when `ffmpeg`
 * is not on PATH (Herald itself needs no FFmpeg; the bench never installs it).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import prism from 'prism-media';
import type { TtsEmulatorHandle } from '../emulators/tts/index.ts';

/** One step of the baseline's ladder: `streams` pipelines at once. */
export interface BaselineStep {
  readonly streams: number;
  /** Request sent → first Opus frame ready (whole download, FFmpeg start-up, first encode). */
  readonly firstFrameMedianMs: number;
  /** Share of frames ready more than 40 ms after their 20 ms slot (the slot a player would send them in). */
  readonly lateShare: number;
  /** This process's CPU, FFmpeg children included, per second of audio. */
  readonly cpuMsPerStreamSecond: number;
}

/** What the baseline measured, or why it did not run. */
export type BaselineResult =
  | { readonly ran: false; readonly reason: string }
  | {
      readonly ran: true;
      readonly steps: readonly BaselineStep[];
      /** The most streams at once with at most 1 % of frames late (0 if none): P4's figure for the peer. */
      readonly maxStreamsHeld: number;
    };

const LATE_MS = 40;

/**
 * Runs the baseline's ladder: `steps` pipelines at once, each on `audioSeconds` of speech, stopping after the
 * first step with more than 1 % of frames late.
 */
export async function runBaseline(
  tts: TtsEmulatorHandle,
  options: { readonly steps: readonly number[]; readonly audioSeconds: number },
): Promise<BaselineResult> {
  const wanted = options.steps.filter((streams) => streams > 0);
  if (wanted.length === 0) return { ran: false, reason: 'not asked for (--baseline=0)' };
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
  } catch {
    return {
      ran: false,
      reason: 'ffmpeg is not installed on this machine (the bench never installs it: apt-get install ffmpeg)',
    };
  }
  const speaker = tts.speakers[0];
  if (!speaker) return { ran: false, reason: 'the TTS emulator lists no speakers' };
  const steps: BaselineStep[] = [];
  for (const streams of wanted) {
    const step = await runStep(tts, speaker.id, streams, options.audioSeconds);
    steps.push(step);
    if (step.lateShare > 0.01) break;
  }
  const held = steps.filter((step) => step.lateShare <= 0.01).map((step) => step.streams);
  return { ran: true, steps, maxStreamsHeld: Math.max(0, ...held) };
}

async function runStep(
  tts: TtsEmulatorHandle,
  speakerId: string,
  streams: number,
  audioSeconds: number,
): Promise<BaselineStep> {
  const text = 'Herald reads this sentence aloud. '.repeat(Math.ceil((audioSeconds * 25) / 34));
  const cpuBefore = process.cpuUsage();
  const childrenBefore = childrenCpuMs();
  let frames = 0;
  let late = 0;
  const firstFrames = await Promise.all(
    Array.from({ length: streams }, async () => {
      const start = performance.now();
      const response = await fetch(`${tts.baseUrl}/speech/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': tts.apiKey },
        body: JSON.stringify({ text, speaker_id: speakerId }),
      });
      const clip = Buffer.from(await response.arrayBuffer());
      let first = 0;
      const ffmpeg = new prism.FFmpeg({
        args: ['-analyzeduration', '0', '-loglevel', '0', '-f', 's16le', '-ar', '48000', '-ac', '2'],
      });
      const encoder = new prism.opus.Encoder({ rate: 48_000, channels: 2, frameSize: 960 });
      let sent = 0;
      let started = 0;
      await pipeline(Readable.from([clip]), ffmpeg, encoder, async (source: AsyncIterable<Buffer>) => {
        for await (const _frame of source) {
          const now = performance.now();
          if (sent === 0) {
            first = now - start;
            started = now;
          }
          // A player sends one frame every 20 ms from the first: a frame ready after its slot is late.
          const due = started + sent * 20;
          if (now - due > LATE_MS) late++;
          sent++;
          frames++;
          const wait = started + sent * 20 - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
      });
      return first;
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000 + (childrenCpuMs() - childrenBefore);
  const sorted = firstFrames.sort((a, b) => a - b);
  return {
    streams,
    firstFrameMedianMs: Math.round((sorted[Math.floor(sorted.length / 2)] ?? 0) * 10) / 10,
    lateShare: frames === 0 ? 1 : Math.round((late / frames) * 10_000) / 10_000,
    cpuMsPerStreamSecond: Math.round((cpuMs / (streams * audioSeconds)) * 1000) / 1000,
  };
}

/** CPU of this process's waited-for children (the FFmpeg processes), from the kernel; 0 where /proc is absent. */
function childrenCpuMs(): number {
  try {
    // /proc/self/stat after the command name: cutime and cstime are fields 16 and 17.
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / ticks;
  } catch {
    return 0;
  }
}
