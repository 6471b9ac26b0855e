/** How the bench and the soak run wait for the Herald process they start (bench/herald-process.ts). */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHeraldProcess } from '../../bench/herald-process.ts';

const dir = () => mkdtempSync(join(tmpdir(), 'herald-process-'));

describe('HeraldProcess.untilReady', () => {
  it('fails with what Herald wrote when its process exits before it is ready', async () => {
    // Node refuses the flag and exits at once: a session that never comes must not be waited for.
    const herald = startHeraldProcess({}, ['--no-such-flag-for-herald'], dir());
    const never = new Promise<never>(() => {});
    await expect(herald.untilReady(never)).rejects.toThrow(
      /exited before it was ready[\s\S]*--no-such-flag-for-herald/,
    );
    // Asked again after the exit, it fails at once too.
    await expect(herald.untilReady(never)).rejects.toThrow(/exited before it was ready/);
  });

  it('answers what the readiness check answers while the process runs', async () => {
    // Without its configuration Herald stays up long enough to print why; the check here answers first.
    const herald = startHeraldProcess({}, [], dir());
    try {
      await expect(herald.untilReady(Promise.resolve('ready'))).resolves.toBe('ready');
    } finally {
      await herald.stop();
    }
  });
});

describe('HeraldProcess.renice', () => {
  it('sets the nice value of every thread of the running process, not only its main thread', async () => {
    // A Node process that stays up (its V8 and libuv threads already running) in Herald's stead.
    const herald = startHeraldProcess({}, ['-e', 'setTimeout(() => {}, 20_000)'], dir());
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const pid = herald.child.pid as number;
      const threads = readdirSync(`/proc/${pid}/task`);
      expect(threads.length).toBeGreaterThan(1);
      expect(herald.renice(7)).toBe(7);
      // nice is field 19 of /proc/<pid>/task/<tid>/stat: index 16 after the parenthesised name.
      const niceOf = (tid: string) =>
        Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]?.split(' ')[16]);
      expect(threads.map(niceOf)).toEqual(threads.map(() => 7));
    } finally {
      await herald.stop();
    }
  });
});
