/** What the bench's parts share: the servers it makes, the text it has spoken, rounding, waiting, the commit. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Channel, Guild, Member } from '../emulators/discord/index.ts';
import type { Spread } from './options.ts';

const ROOT = join(import.meta.dirname, '..');
/** 40 ms of audio per character in the TTS emulator (its default). */
const MS_PER_CHAR = 40;

export interface Server {
  readonly guild: Guild;
  readonly text: Channel;
  readonly voice: Channel;
  readonly member: Member;
}

/** Text the TTS emulator turns into `seconds` of audio. */
export function utteranceOf(seconds: number): string {
  const words = 'Herald reads this sentence aloud for the benchmark. ';
  return words
    .repeat(Math.ceil((seconds * 1000) / MS_PER_CHAR / words.length))
    .slice(0, (seconds * 1000) / MS_PER_CHAR);
}

export function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { median: round(at(0.5), 1), p95: round(at(0.95), 1), n: values.length };
}

export function commitOf(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
  } catch {
    return 'unknown';
  }
}

/** `value` to `digits` decimals; never -0 (JSON writes it as 0, so a result would not survive its own file). */
export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor + 0;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lets start-up work (command registration, GUILD_CREATE handling) finish before anything is measured. */
export function settle(): Promise<void> {
  return sleep(500);
}
