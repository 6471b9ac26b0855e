/**
 * `npm test`: lint, then the type check beside every vitest project, in two lanes, each running end-to-end files one
 * at a time. The first lane runs project `e2e`. The second starts at once: the three-minute soak, and beside it in a
 * vitest process of their own the unit files, then project `e2e-while-soak`; then project `e2e-after-soak` (the lists
 * in vitest.config.ts are chosen so the lanes end together). Vitest runs a file-serial project after every other
 * project's files, so inside one vitest run the soak could never overlap an end-to-end file. The second lane's output
 * is printed when it ends, so the runs' lines do not interleave. With arguments (`npm test -- test/foo.test.ts`) this
 * is just `vitest run` with them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const args = process.argv.slice(2);

/** Runs a command; resolves with its exit code, and its output when `quiet` (else it goes to ours). */
function run(command: string, commandArgs: readonly string[], quiet = false) {
  let child: ChildProcess | undefined;
  const done = new Promise<{ code: number; output: string }>((resolve) => {
    child = spawn(command, commandArgs, {
      stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      env: process.env,
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', (error) => resolve({ code: 1, output: `${output}${error.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
  return Object.assign(done, { stop: () => child?.kill('SIGTERM') });
}

const vitest = join(import.meta.dirname, '..', 'node_modules', '.bin', 'vitest');
/** `--project` arguments of vitest. */
const projects = (...names: string[]) => names.flatMap((name) => ['--project', name]);

if (args.length > 0) {
  process.exit((await run(vitest, ['run', ...args])).code);
}

/**
 * The second lane: the soak, with the unit files and then the end-to-end files of project `e2e-while-soak` beside it in
 * a vitest process of their own (the soak waits on real time far more than it computes), then the end-to-end files of
 * project `e2e-after-soak`. Resolves with the exit code and everything the runs printed; `stop` ends whichever run is
 * going and starts no other.
 */
function secondLane() {
  let current: ReturnType<typeof run>[] = [];
  let stopped = false;
  const step = (...runs: ReturnType<typeof run>[]) => {
    current = runs;
    return Promise.all(runs);
  };
  const done = (async () => {
    const first = await step(
      run(vitest, ['run', '--project', 'soak'], true),
      run(vitest, ['run', ...projects('unit', 'unit-own-modules', 'e2e-while-soak')], true),
    );
    const output = first.map((result) => result.output).join('');
    const code = first.find((result) => result.code !== 0)?.code ?? 0;
    if (code !== 0 || stopped) return { code: code || 1, output };
    const [beside] = await step(run(vitest, ['run', '--project', 'e2e-after-soak'], true));
    return { code: beside?.code ?? 1, output: output + (beside?.output ?? '') };
  })();
  return Object.assign(done, {
    stop: () => {
      stopped = true;
      for (const running of current) running.stop();
    },
  });
}

const soak = secondLane();
let code = (await run('npm', ['run', '--silent', 'lint'])).code;
if (code === 0) {
  // Types are checked beside the tests rather than before them (about 15 s sooner); a type error fails the run the
  // same, and stops the tests.
  const types = run('npm', ['run', '--silent', 'typecheck'], true);
  const tests = run(vitest, ['run', '--project', 'e2e']);
  const typed = await types;
  if (typed.code !== 0) {
    process.stdout.write(typed.output);
    tests.stop();
  }
  const tested = await tests;
  code = typed.code || tested.code;
}
if (code !== 0) {
  // Lint, types or a test failed: the second lane's verdict would not change the outcome.
  soak.stop();
  process.exit(code);
}
console.log(
  '\n── the second lane: the soak beside the unit files and e2e-while-soak, then e2e-after-soak ──',
);
const soaked = await soak;
process.stdout.write(soaked.output);
process.exit(soaked.code);
