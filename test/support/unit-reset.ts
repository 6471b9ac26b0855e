/**
 * Run before each unit file (vitest.config.ts): the unit files share one module graph (`isolate: false`), so what
 * a file changed in it is put back when the file ends, as a fresh worker would have it: real timers, spied functions
 * restored, stubbed globals and environment variables unstubbed.
 */
import { afterAll, vi } from 'vitest';

afterAll(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
  vi.unstubAllEnvs();
});
