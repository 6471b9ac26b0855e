import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// Every Node process the tests start (vitest's workers, Herald's own processes and the shard processes they fork)
// loads discord.js and Herald's TypeScript afresh. Node's compile cache keeps what it compiled, keyed by each file's
// content (an edited file is compiled again), so every start after the first skips that work: about 0.6 s of each
// Herald process start on two cores, and end-to-end files start well over a hundred. test/support/process.ts and
// bench/herald-process.ts pass it on to the processes they start in a clean environment.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'herald-node-compile-cache');

/** Settings of both end-to-end projects. */
const endToEnd = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  // End-to-end files each start a bot, two emulators and real sockets; on two cores running them one at a time (in
  // each project) keeps audio pacing honest.
  fileParallelism: false,
  // The shard tests run Herald's processes on one PostgreSQL, as several machines would.
  globalSetup: ['test/support/postgres-setup.ts'],
};

/** Settings of both unit projects. */
const unit = {
  testTimeout: 20_000,
  // A throwaway PostgreSQL cluster for the storage and budget tests (skipped, saying why, without one).
  globalSetup: ['test/support/postgres-setup.ts'],
};

/**
 * Unit files that must import their modules afresh (project `unit-own-modules`): the FFmpeg probe of @discordjs/voice
 * (through prism-media) runs once per process, and resource.test.ts watches it happen; and @discordjs/voice's audio
 * cycle is one per process (its players and the time of its next cycle), which the patch tests below time.
 */
const OWN_MODULES = [
  'test/audio/resource.test.ts',
  'test/voice/first-frame-patch.test.ts',
  'test/voice/late-cycle-patch.test.ts',
  'test/voice/multi-frame-packets-patch.test.ts',
  'test/voice/prepare-slices-patch.test.ts',
];

/**
 * End-to-end files run by `npm test` in the soak's lane, chosen so that both lanes end about together (per-file
 * durations: vitest's results.json after a run). The soak (about 190 s) runs beside the unit files (about 80 s) and
 * then these files (about 100 s, project `e2e-while-soak`): three that assert outcomes rather than audio timing.
 */
const WHILE_THE_SOAK = ['test/e2e/uncached.test.ts', 'test/e2e/members.test.ts', 'test/e2e/ops.test.ts'];

/**
 * End-to-end files run by `npm test` in the soak's lane once the soak is done (project `e2e-after-soak`): Herald's
 * processes started, killed and restarted, about 270 s, against lint, types and the other end-to-end files in the
 * first lane.
 */
const AFTER_THE_SOAK = [
  'test/e2e/shards.test.ts',
  'test/e2e/crash.test.ts',
  'test/e2e/shard-stop.test.ts',
  'test/e2e/process.test.ts',
  'test/e2e/shards-resume.test.ts',
];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [
            'test/e2e/**',
            'test/soak/**',
            'test/sandbox/page.test.ts',
            'test/sandbox/server.test.ts',
            ...OWN_MODULES,
          ],
          // The unit files share one module graph rather than each importing discord.js, @discordjs/voice and
          // Herald afresh: a third of the unit files' time was spent importing. Mocks, timers and stubs are put
          // back after each file (test/support/unit-reset.ts); a file that needs modules of its own is in OWN_MODULES.
          isolate: false,
          setupFiles: ['test/support/unit-reset.ts'],
          ...unit,
        },
      },
      {
        test: {
          // The unit files that need modules nobody else loaded (see OWN_MODULES).
          name: 'unit-own-modules',
          include: OWN_MODULES,
          ...unit,
        },
      },
      {
        test: {
          name: 'e2e',
          // The sandbox's page tests drive a real Chromium against Herald and both emulators: end to end too.
          include: ['test/e2e/**/*.test.ts', 'test/sandbox/page.test.ts', 'test/sandbox/server.test.ts'],
          exclude: [...WHILE_THE_SOAK, ...AFTER_THE_SOAK],
          ...endToEnd,
        },
      },
      {
        test: {
          // See WHILE_THE_SOAK: `npm test` runs them after the unit files, in their vitest process, beside the soak.
          name: 'e2e-while-soak',
          include: WHILE_THE_SOAK,
          ...endToEnd,
        },
      },
      {
        test: {
          // See AFTER_THE_SOAK: `npm test` runs them in a vitest process of their own once the soak is done.
          name: 'e2e-after-soak',
          include: AFTER_THE_SOAK,
          ...endToEnd,
        },
      },
      {
        test: {
          // Three minutes of `npm run soak` (Herald as its own process). `npm test` (scripts/test.ts) runs it in a
          // vitest process of its own, beside the file-serial e2e projects: inside one run it would go first.
          name: 'soak',
          include: ['test/soak/**/*.test.ts'],
          testTimeout: 330_000,
        },
      },
    ],
  },
});
