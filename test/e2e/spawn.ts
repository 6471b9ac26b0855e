import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Herald as an operator runs it: a real process (`npm start`, `npm run start:shards`, a script), its output kept.

/** How a process ended. */
export interface Run {
  readonly code: number | null;
  readonly output: string;
}

/** A running process: its handle, its exit, the output so far, and the first time its output matched `until`. */
export interface Spawned {
  readonly child: ChildProcess;
  readonly done: Promise<Run>;
  readonly seen: Promise<string>;
  /** Everything written to standard output and error so far. */
  output(): string;
  /** Resolves with the output once it matches `pattern` (from the start). @throws after `timeoutMs`. */
  until(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

/**
 * Runs a Node script (the project's Node) in a fresh temporary directory, with a clean environment: nothing from
 * this machine's shell or a developer's `.env` leaks in; only PATH and `env`.
 */
export function run(script: string, args: string[], env: Record<string, string>, until?: RegExp): Spawned {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: mkdtempSync(join(tmpdir(), 'herald-proc-')),
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let resolveSeen: (output: string) => void = () => {};
  const seen = new Promise<string>((resolve) => {
    resolveSeen = resolve;
  });
  const watchers = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (until?.test(output)) resolveSeen(output);
    for (const watch of [...watchers]) watch();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const done = once(child, 'exit').then(([code]) => ({ code: code as number | null, output }));
  return {
    child,
    done,
    seen,
    output: () => output,
    until: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
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
      }),
  };
}
