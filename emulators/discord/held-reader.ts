/**
 * The voice server's reader while datagrams are held (a benchmark step): held-reader.c, built here with the
 * machine's C compiler and run by udp-receiver-worker.ts on the socket it already has. It reads a datagram for
 * about a sixth of what Node's dgram costs, and the kernel timestamps each on arrival, so the emulated world takes
 * less of the cores the bot is measured on. Where there is no compiler, the worker holds the datagrams itself.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SOURCE = fileURLToPath(new URL('./held-reader.c', import.meta.url));

/**
 * The reader's clock (CLOCK_MONOTONIC, ms) less this thread's epoch time (performance.timeOrigin +
 * performance.now()): performance.now() runs on the same clock as process.hrtime, from this thread's origin.
 */
function monotonicAhead(): number {
  // Read between two readings of performance.now(), the closest pair of several (the first may load code).
  let best = { apart: Number.POSITIVE_INFINITY, ahead: 0 };
  for (let i = 0; i < 5; i++) {
    const before = performance.now();
    const monotonic = Number(process.hrtime.bigint()) / 1e6;
    const after = performance.now();
    if (after - before < best.apart)
      best = { apart: after - before, ahead: monotonic - (performance.timeOrigin + (before + after) / 2) };
  }
  return best.ahead;
}

/**
 * The reader's program, built once per version of its source into node_modules/.cache; a sentence saying why not
 * when there is no C compiler or the build failed.
 */
export function buildHeldReader(): { readonly path: string } | { readonly unavailable: string } {
  try {
    const source = readFileSync(SOURCE);
    const version = createHash('sha256').update(source).digest('hex').slice(0, 12);
    const path = join(
      dirname(SOURCE),
      '..',
      '..',
      'node_modules',
      '.cache',
      'herald',
      `held-reader-${version}`,
    );
    if (existsSync(path)) return { path };
    mkdirSync(dirname(path), { recursive: true });
    const building = `${path}.${process.pid}`;
    execFileSync(process.env.CC ?? 'cc', ['-O2', '-Wall', '-o', building, SOURCE], { stdio: 'pipe' });
    renameSync(building, path);
    return { path };
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return { unavailable: `the native reader could not be built (${stderr || (error as Error).message})` };
  }
}

/** What is held, as the reader counts it. */
export interface ReaderSummary {
  readonly packets: number;
  readonly sources: number;
  /** Epoch ms of the last arrival (0: none yet). */
  readonly lastAt: number;
  /** CPU the reader's process has spent (user + system), ms. */
  readonly cpuMs: number;
}

/** A held datagram: its bytes and arrival (epoch ms), in arrival order. */
export interface HeldChunk {
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly lengths: Uint16Array;
  readonly at: Float64Array;
}

/** A running reader. */
export interface HeldReader {
  summary(): Promise<ReaderSummary>;
  nap(ms: number): void;
  /** Ends the reader; resolves with what it held, in chunks of at most `chunkPackets`, and its CPU. */
  release(chunkPackets: number): Promise<{ readonly chunks: HeldChunk[]; readonly cpuMs: number }>;
  kill(): void;
}

/** Starts the reader at `path` on the socket `socketFd` (which the caller no longer reads). */
export async function startHeldReader(path: string, socketFd: number, napMs: number): Promise<HeldReader> {
  const offsetMs = monotonicAhead();
  const file = join(tmpdir(), `herald-held-${process.pid}-${Date.now()}.bin`);
  const child = spawn(path, [String(napMs), file], { stdio: ['pipe', 'pipe', 'inherit', socketFd] });
  const { stdin, stdout } = child;
  if (!stdin || !stdout) throw new Error('the native reader has no stdin or stdout');
  const answers: ((line: string) => void)[] = [];
  let ended: Error | undefined;
  const fail = (error: Error) => {
    ended ??= error;
    for (const answer of answers.splice(0)) answer('');
  };
  child.on('error', fail);
  child.on('exit', (code) => fail(new Error(`the native reader exited (${code})`)));
  createInterface({ input: stdout }).on('line', (line) => answers.shift()?.(line));
  const ask = (command: string | undefined): Promise<string> =>
    new Promise((resolve, reject) => {
      if (ended) {
        reject(ended);
        return;
      }
      answers.push((line) => (line ? resolve(line) : reject(ended)));
      if (command) stdin.write(`${command}\n`);
    });
  let cpuMs = 0;
  const summary = async (): Promise<ReaderSummary> => {
    const [, packets, sources, lastAt, cpu] = (await ask('s')).split(' ').map(Number);
    cpuMs = cpu ?? cpuMs;
    return { packets: packets ?? 0, sources: sources ?? 0, lastAt: lastAt ? lastAt - offsetMs : 0, cpuMs };
  };
  await ask(undefined); // "ready"
  return {
    summary,
    nap: (ms) => stdin.write(`n ${ms}\n`),
    release: async (chunkPackets) => {
      await summary();
      await ask('r');
      try {
        return { chunks: chunksOf(readFileSync(file), chunkPackets, offsetMs), cpuMs };
      } finally {
        rmSync(file, { force: true });
      }
    },
    kill: () => {
      child.kill();
      rmSync(file, { force: true });
    },
  };
}

/**
 * Splits the reader's file (length u16 LE, arrival f64 LE, bytes; repeated) into chunks, each arrival less
 * `offsetMs`.
 */
export function chunksOf(file: Buffer, chunkPackets: number, offsetMs = 0): HeldChunk[] {
  const chunks: HeldChunk[] = [];
  let offset = 0;
  while (offset < file.length) {
    const start = offset;
    const lengths: number[] = [];
    const at: number[] = [];
    const parts: Buffer[] = [];
    while (offset < file.length && lengths.length < chunkPackets) {
      const length = file.readUInt16LE(offset);
      at.push(file.readDoubleLE(offset + 2) - offsetMs);
      parts.push(file.subarray(offset + 10, offset + 10 + length));
      lengths.push(length);
      offset += 10 + length;
    }
    if (offset > file.length)
      throw new Error(`the native reader's file ends inside a datagram (at ${start})`);
    // A buffer of its own, transferable to another thread.
    const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
    let written = 0;
    for (const part of parts) {
      bytes.set(part, written);
      written += part.length;
    }
    chunks.push({ bytes, lengths: Uint16Array.from(lengths), at: Float64Array.from(at) });
  }
  return chunks;
}
