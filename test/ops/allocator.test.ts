import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  allocatorCheck,
  allocatorIn,
  allocatorOf,
  findJemalloc,
  JEMALLOC_PATHS,
} from '../../src/ops/allocator.ts';

describe('allocatorIn', () => {
  it('names the allocator mapped into a process, glibc when none other is', () => {
    const base = [
      '55d0c8a00000-55d0c8a01000 r--p 00000000 08:01 131 /usr/bin/node',
      '7f3c1a000000-7f3c1a022000 r--p 00000000 08:01 262 /usr/lib/x86_64-linux-gnu/libc.so.6',
    ].join('\n');
    expect(allocatorIn(base)).toBe('glibc');
    expect(
      allocatorIn(
        `${base}\n7f3c1b000000-7f3c1b010000 r-xp 00000000 08:01 99 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2`,
      ),
    ).toBe('jemalloc');
    expect(
      allocatorIn(`${base}\n7f3c1b000000-7f3c1b010000 r-xp 0 08:01 99 /usr/local/lib/libmimalloc.so.2.0`),
    ).toBe('mimalloc');
    // A file that merely mentions the name elsewhere in its path is not the library.
    expect(
      allocatorIn(`${base}\n7f3c1b000000-7f3c1b010000 r--p 0 08:01 99 /data/libjemalloc-notes.txt`),
    ).toBe('glibc');
  });
});

describe('findJemalloc', () => {
  it('takes the first known place that exists', () => {
    const present = new Set([JEMALLOC_PATHS[2] ?? '', JEMALLOC_PATHS[3] ?? '']);
    expect(findJemalloc((path) => present.has(path))).toBe(JEMALLOC_PATHS[2]);
    expect(findJemalloc(() => false)).toBeUndefined();
  });
});

describe('allocatorOf', () => {
  const jemalloc = findJemalloc();

  // Skipped without libjemalloc2 on a development machine; CI (.ci/run) installs it, and fails here without it.
  it.skipIf(jemalloc === undefined && !process.env.CI)(
    'sees jemalloc in a process started with it preloaded, and glibc in one without (needs libjemalloc2)',
    async () => {
      // Each says when its code runs: by then the loader has mapped every library it preloads.
      const started = (env: NodeJS.ProcessEnv) =>
        spawn(process.execPath, ['-e', "process.stdout.write('up'); setTimeout(() => {}, 10_000)"], {
          env,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
      const preloaded = started({ ...process.env, LD_PRELOAD: jemalloc });
      const plain = started({ ...process.env, LD_PRELOAD: '' });
      try {
        await Promise.all([once(preloaded.stdout, 'data'), once(plain.stdout, 'data')]);
        expect(allocatorOf(preloaded.pid ?? 0)).toBe('jemalloc');
        expect(allocatorOf(plain.pid ?? 0)).toBe('glibc');
      } finally {
        preloaded.kill();
        plain.kill();
        await Promise.all([once(preloaded, 'exit'), once(plain, 'exit')]);
      }
    },
  );

  it('is undefined for a process that does not exist', () => {
    expect(allocatorOf(2 ** 30)).toBeUndefined();
  });
});

describe('allocatorCheck', () => {
  it('says which allocator runs, and how to preload jemalloc when it is glibc', () => {
    expect(allocatorCheck({ allocator: 'jemalloc', jemalloc: undefined })).toMatchObject({
      status: 'ok',
      detail: 'jemalloc, preloaded',
    });
    const installed = allocatorCheck({
      allocator: 'glibc',
      jemalloc: '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
    });
    expect(installed.status).toBe('ok');
    expect(installed.detail).toContain('LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2');
    expect(allocatorCheck({ allocator: 'glibc', jemalloc: undefined }).detail).toContain(
      'apt install libjemalloc2',
    );
    expect(allocatorCheck({ allocator: undefined, jemalloc: undefined }).detail).toContain('not known');
  });
});
