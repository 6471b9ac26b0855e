/**
 * Herald as its own process (`node src/index.ts`, as `npm start` with `SHARD_COUNT=1`), watched from outside through /proc:
 * CPU, resident memory and open file descriptors. The benchmark and the soak run both drive it this way.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { join } from 'node:path';
import { allocatorOf } from '../src/ops/index.ts';

const INDEX = join(import.meta.dirname, '..', 'src', 'index.ts');
/** `npm run start:shards`: the sharding manager, with one child process per shard. */
const SHARDS = join(import.meta.dirname, '..', 'src', 'shard', 'main.ts');

/** A running Herald process. */
export interface HeraldProcess {
  readonly child: ChildProcess;
  /** The tail of what it wrote to standard output and error (at most 200,000 characters). */
  readonly output: () => string;
  /** CPU time used so far (user + system), in ms: the process and its children (the shards) together. */
  cpuMs(): number;
  /** Resident memory now, in MB: the process and its children together. */
  rssMb(): number;
  /**
   * Minor page faults so far, the process and its children together: each one a page of memory the kernel handed
   * over (and zeroed) as it was first touched.
   */
  minorFaults(): number;
  /**
   * Open file descriptors now (sockets, files, pipes, timers' eventfds), the process and its children together:
   * Node's handles as the kernel sees them.
   */
  openFiles(): number;
  /** The memory allocators mapped into the process and its children, each named once (`glibc`, `jemalloc`, …). */
  allocators(): string[];
  /** The nice value set (shard processes inherit it), or why it could not be set; undefined: none asked for. */
  readonly nice: number | string | undefined;
  /**
   * Sets the nice value of every thread of the process and its children (Linux nice is per thread: a thread takes
   * its creator's at birth, so re-nicing a running process means each of its threads). Returns the main thread's
   * value as set, or why it could not be set.
   */
  renice(value: number): number | string;
  /** True while the process runs. */
  running(): boolean;
  /** SIGTERM, then SIGKILL after 12 s. */
  stop(): Promise<void>;
  /**
   * Waits for `ready` (Herald seen ready from outside, e.g. its gateway session). @throws, with the tail of what
   * Herald wrote, if its process exits first: a Herald that cannot start (a V8 flag Node refuses, a bad
   * configuration) ends the run with its reason rather than leaving it waiting for a session that never comes.
   */
  untilReady<T>(ready: Promise<T>): Promise<T>;
}

/**
 * Starts `node [flags] src/index.ts` in `cwd` with exactly `env` (and PATH); with `entry: 'shards'`, the sharding
 * manager (`src/shard/main.ts`, which reads SHARD_COUNT from `env`) instead. With `bundle` (a folder scripts/build.ts
 * built, dist/ for `npm start`), the same entry of the bundle.
 */
export function startHeraldProcess(
  env: Record<string, string>,
  flags: readonly string[],
  cwd: string,
  options: {
    readonly entry?: 'index' | 'shards';
    /** Run the bundle in this folder (dist/ is what `npm start` runs) instead of the sources. */
    readonly bundle?: string;
    /** The process's nice value (its shard processes inherit it): above 0, the machine's other work goes first. */
    readonly nice?: number;
    /** A file that receives everything it writes, as it writes it (the whole log, not only the kept tail). */
    readonly logFile?: string;
  } = {},
): HeraldProcess {
  const script = options.bundle
    ? join(options.bundle, options.entry === 'shards' ? join('shard', 'main.js') : 'index.js')
    : options.entry === 'shards'
      ? SHARDS
      : INDEX;
  const child = spawn(process.execPath, [...flags, script], {
    cwd,
    // The shard processes are forked by discord.js's ShardingManager without the manager's flags: they get them
    // through NODE_OPTIONS (--cpu-prof then profiles every shard, not only the manager).
    env: {
      PATH: process.env.PATH ?? '',
      // Node's compile cache, when the caller has one (the tests do, from vitest.config.ts): a faster start, no change.
      ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
      ...env,
      ...(options.entry === 'shards' && flags.length > 0 ? { NODE_OPTIONS: flags.join(' ') } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const log = options.logFile ? createWriteStream(options.logFile) : undefined;
  const collect = (chunk: Buffer) => {
    log?.write(chunk);
    // Keep the tail only: a long run at warn level is still small, but never unbounded.
    output = (output + chunk.toString()).slice(-200_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = once(child, 'exit');
  child.once('exit', () => log?.end());
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start Herald');
  let nice: number | string | undefined;
  if (options.nice) {
    // Below 0 needs root (or CAP_SYS_NICE): without it the run goes on at the bench's own, and says so.
    try {
      setPriority(pid, options.nice);
      nice = getPriority(pid);
    } catch (error) {
      nice = `not set (${error instanceof Error ? error.message : String(error)})`;
    }
  }
  const ticks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    nice,
    output: () => output,
    running,
    cpuMs() {
      // utime and stime are fields 14 and 15 of /proc/<pid>/stat.
      let sum = 0;
      for (const id of tree(pid)) {
        const fields = statFields(id);
        sum += ((Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) * 1000) / ticks;
      }
      return sum;
    },
    minorFaults() {
      // minflt is field 10 of /proc/<pid>/stat.
      let sum = 0;
      for (const id of tree(pid)) sum += Number(statFields(id)[7] ?? 0);
      return sum;
    },
    rssMb() {
      let kb = 0;
      for (const id of tree(pid))
        kb += Number(/VmRSS:\s+(\d+) kB/.exec(readProc(`/proc/${id}/status`))?.[1] ?? 0);
      return kb / 1024;
    },
    openFiles() {
      return tree(pid).reduce((sum, id) => {
        try {
          return sum + readdirSync(`/proc/${id}/fd`).length;
        } catch {
          return sum; // it exited meanwhile
        }
      }, 0);
    },
    renice(value) {
      try {
        for (const id of tree(pid)) for (const thread of threadsOf(id)) setPriority(thread, value);
        return getPriority(pid);
      } catch (error) {
        return `not set (${error instanceof Error ? error.message : String(error)})`;
      }
    },
    allocators() {
      return [...new Set(tree(pid).map((id) => allocatorOf(id) ?? 'unknown'))].sort();
    },
    async untilReady(ready) {
      let onExit = (): void => {};
      const exited = new Promise<never>((_, reject) => {
        onExit = () =>
          reject(new Error(`Herald exited before it was ready; its last output:\n${output.slice(-2_000)}`));
        if (running()) child.once('exit', onExit);
        else onExit();
      });
      try {
        return await Promise.race([ready, exited]);
      } finally {
        child.off('exit', onExit);
      }
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

/** A /proc file's text; empty when the process is gone. */
function readProc(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * The fields of /proc/<id>/stat after the parenthesised command name (so field 3, the state, is at index 0); none
 * when the process is gone.
 */
function statFields(id: number | string): string[] {
  return readProc(`/proc/${id}/stat`).split(') ')[1]?.split(' ') ?? [];
}

/** The thread ids of process `id` (none when it is gone). */
function threadsOf(id: number): number[] {
  try {
    return readdirSync(`/proc/${id}/task`).map(Number);
  } catch {
    return [];
  }
}

/** `pid` and every process descending from it (a sharding manager's shards), from /proc's parent ids. */
function tree(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const fields = statFields(name);
    if (fields[1]) parents.set(Number(name), Number(fields[1]));
  }
  const found = [pid];
  for (let i = 0; i < found.length; i++) {
    for (const [child, parent] of parents) if (parent === found[i]) found.push(child);
  }
  return found;
}
