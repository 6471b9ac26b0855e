/** How the bench and the soak run wait for the Herald process they start (bench/herald-process.ts). */
import { mkdtempSync } from 'node:fs';
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
