/**
 * Herald as its own process (`node src/index.ts`, exactly as `npm start`), watched from outside through /proc:
 * CPU, resident memory and open file descriptors. The benchmark and the soak run both drive it this way.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const INDEX = join(import.meta.dirname, '..', 'src', 'index.ts');

/** A running Herald process. */
export interface HeraldProcess {
  readonly child: ChildProcess;
  /** The tail of what it wrote to standard output and error (at most 200,000 characters). */
  readonly output: () => string;
  /** CPU time used so far (user + system), in ms. */
  cpuMs(): number;
  /** Resident memory now, in MB. */
  rssMb(): number;
  /** Open file descriptors now (sockets, files, pipes, timers' eventfds): Node's handles as the kernel sees them. */
  openFiles(): number;
  /** True while the process runs. */
  running(): boolean;
  /** SIGTERM, then SIGKILL after 12 s. */
  stop(): Promise<void>;
}

/** Starts `node [flags] src/index.ts` in `cwd` with exactly `env` (and PATH). */
export function startHeraldProcess(
  env: Record<string, string>,
  flags: readonly string[],
  cwd: string,
): HeraldProcess {
  const child = spawn(process.execPath, [...flags, INDEX], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    // Keep the tail only: a long run at warn level is still small, but never unbounded.
    output = (output + chunk.toString()).slice(-200_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = once(child, 'exit');
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start Herald');
  const ticks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    output: () => output,
    running,
    cpuMs() {
      // /proc/<pid>/stat: utime and stime are fields 14 and 15, after the parenthesised command name.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticks;
    },
    rssMb() {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return Number(match?.[1] ?? 0) / 1024;
    },
    openFiles() {
      return readdirSync(`/proc/${pid}/fd`).length;
    },
    async stop() {
      if (!running()) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        exited,
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            child.kill('SIGKILL');
            resolve();
          }, 12_000);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
