/**
 * The peer-style baseline most TTS bots use: download the whole clip, then decode it with FFmpeg through
 * prism-media and encode it again to Opus, paced at real time as a player would. Run in this process against the
 * same TTS emulator, so its CPU per stream-second sits beside Herald's in the same run. Skipped, with the reason,
 * when `ffmpeg` is not on PATH (Herald itself needs no FFmpeg; the bench never installs it).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import prism from 'prism-media';
import type { TtsEmulator } from '../emulators/tts/index.ts';

/** What the baseline measured, or why it did not run. */
export type BaselineResult =
  | { readonly ran: false; readonly reason: string }
  | {
      readonly ran: true;
      readonly streams: number;
      /** Request sent → first Opus frame ready (whole download, FFmpeg start-up, first encode). */
      readonly firstFrameMedianMs: number;
      /** This process's CPU, FFmpeg children included, per second of audio. */
      readonly cpuMsPerStreamSecond: number;
    };

/** Runs `streams` baseline pipelines at once, each on `audioSeconds` of speech. */
export async function runBaseline(
  tts: TtsEmulator,
  options: { readonly streams: number; readonly audioSeconds: number },
): Promise<BaselineResult> {
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
  } catch {
    return { ran: false, reason: 'ffmpeg is not installed on this machine (not installed by the bench)' };
  }
  const speaker = tts.speakers[0];
  if (!speaker) return { ran: false, reason: 'the TTS emulator lists no speakers' };
  const text = 'Herald reads this sentence aloud. '.repeat(Math.ceil((options.audioSeconds * 25) / 34));
  const cpuBefore = process.cpuUsage();
  const childrenBefore = childrenCpuMs();
  const firstFrames = await Promise.all(
    Array.from({ length: options.streams }, async () => {
      const start = performance.now();
      const response = await fetch(`${tts.baseUrl}/speech/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': tts.apiKey },
        body: JSON.stringify({ text, speaker_id: speaker.id }),
      });
      const clip = Buffer.from(await response.arrayBuffer());
      let first = 0;
      const ffmpeg = new prism.FFmpeg({
        args: ['-analyzeduration', '0', '-loglevel', '0', '-f', 's16le', '-ar', '48000', '-ac', '2'],
      });
      const encoder = new prism.opus.Encoder({ rate: 48_000, channels: 2, frameSize: 960 });
      let frames = 0;
      const started = performance.now();
      await pipeline(Readable.from([clip]), ffmpeg, encoder, async (source: AsyncIterable<Buffer>) => {
        for await (const _frame of source) {
          if (frames === 0) first = performance.now() - start;
          frames++;
          // A player sends one frame every 20 ms.
          const due = started + frames * 20 - performance.now();
          if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
        }
      });
      return first;
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000 + (childrenCpuMs() - childrenBefore);
  const sorted = firstFrames.sort((a, b) => a - b);
  return {
    ran: true,
    streams: options.streams,
    firstFrameMedianMs: Math.round((sorted[Math.floor(sorted.length / 2)] ?? 0) * 10) / 10,
    cpuMsPerStreamSecond: Math.round((cpuMs / (options.streams * options.audioSeconds)) * 1000) / 1000,
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
