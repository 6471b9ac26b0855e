import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Herald's (or a script's) process as an operator runs it, with everything it printed. */

export interface Run {
  readonly code: number | null;
  /** The signal that ended it (`SIGKILL` after `kill -9`), or null. */
  readonly signal: NodeJS.Signals | null;
  readonly output: string;
}

/** A running process: its handle, its exit, and its output as it comes. */
export interface RunningProcess {
  readonly child: ChildProcess;
  /** Resolves when it exits. */
  readonly done: Promise<Run>;
  /** Resolves with the output so far once `until` matched it. */
  readonly seen: Promise<string>;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the output once it matches `pattern` (from the start). @throws after `timeoutMs`. */
  until(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves once the output printed after this call matches `pattern`. */
  untilPrinted(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

/**
 * Runs `script` with this Node in a clean environment (nothing from the shell or a developer's .env). With
 * `group`, it leads a process group of its own (as a service under systemd, or a command in a terminal), so that a
 * test can signal it and every process it started at once: `process.kill(-child.pid, 'SIGTERM')`.
 */
export function run(
  script: string,
  args: string[],
  env: Record<string, string>,
  until?: RegExp,
  options: { readonly group?: boolean } = {},
): RunningProcess {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: mkdtempSync(join(tmpdir(), 'herald-proc-')),
    env: { PATH: process.env.PATH ?? '', ...compileCache(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.group === true,
  });
  let output = '';
  const watchers = new Set<() => void>();
  let resolveSeen: (output: string) => void = () => {};
  const seen = new Promise<string>((resolve) => {
    resolveSeen = resolve;
  });
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (until?.test(output)) resolveSeen(output);
    for (const watcher of watchers) watcher();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const done = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
    output,
  }));
  return {
    child,
    done,
    seen,
    output: () => output,
    until(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`no ${pattern} in the output within ${timeoutMs} ms:\n${output.slice(-3000)}`));
        }, timeoutMs);
        const check = (): void => {
          if (!pattern.test(output)) return;
          clearTimeout(timer);
          watchers.delete(check);
          resolve(output);
        };
        watchers.add(check);
        check();
      });
    },
    untilPrinted(pattern, timeoutMs = 20_000) {
      const from = output.length;
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(output.slice(from))) return;
          watchers.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(
            new Error(
              `the process did not print ${pattern} within ${timeoutMs} ms:\n${output.slice(-2_000)}`,
            ),
          );
        }, timeoutMs);
        watchers.add(check);
        void done.then(() => {
          if (!watchers.has(check)) return;
          watchers.delete(check);
          clearTimeout(timer);
          reject(new Error(`the process exited before printing ${pattern}:\n${output.slice(-2_000)}`));
        });
        check();
      });
    },
  };
}

/**
 * Node's compile cache (set by vitest.config.ts) for a process started in a clean environment: it changes how fast the
 * process starts, never what it does.
 */
export function compileCache(): Record<string, string> {
  const dir = process.env.NODE_COMPILE_CACHE;
  return dir ? { NODE_COMPILE_CACHE: dir } : {};
}

/** The name the shard tests use. */
export type Spawned = RunningProcess;

/** The JSON log lines a process (or a group: the manager's and every shard's) printed so far. */
export const linesOf = (spawned: RunningProcess): Record<string, unknown>[] =>
  spawned
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
