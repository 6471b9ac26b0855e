import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SHARD_EXEC_ARGV } from '../../src/shard/node-flags.ts';
import { collectOnceSettled } from '../../src/shard/settle-collection.ts';

const logger = { debug: vi.fn() };

afterEach(() => {
  vi.useRealTimers();
});

describe('collectOnceSettled', () => {
  it('collects once, when the delay is over, and says how long it took', () => {
    vi.useFakeTimers();
    const gc = vi.fn();
    collectOnceSettled(gc, logger, 10_000);
    vi.advanceTimersByTime(9_999);
    expect(gc).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(gc).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(60_000);
    expect(gc).toHaveBeenCalledTimes(1);
    expect(logger.debug).toHaveBeenCalledWith('settle collection done', { ms: expect.any(Number) });
  });

  it('does nothing in a process without V8’s gc (one not started with --expose-gc)', () => {
    vi.useFakeTimers();
    collectOnceSettled(undefined, logger, 10);
    expect(vi.getTimerCount()).toBe(0);
  });
});

/**
 * What it is for, in a process run as a shard process is (SHARD_EXEC_ARGV): it keeps 20 MB of ArrayBuffers, as a
 * started shard process holds some, then 52 MB more, as a rush's starts do. Prints the full collections made while
 * the 52 MB came.
 */
const rush = (settle: boolean): number => {
  const script = join(mkdtempSync(join(tmpdir(), 'herald-settle-')), 'rush.mjs');
  writeFileSync(
    script,
    `import { PerformanceObserver, constants } from 'node:perf_hooks';
     import { collectOnceSettled } from ${JSON.stringify(new URL('../../src/shard/settle-collection.ts', import.meta.url).href)};
     const kept = [];
     const keep = (mb) => { for (let i = 0; i < mb * 16; i++) kept.push(Buffer.allocUnsafeSlow(65536).fill(1)); };
     keep(20);
     if (${settle}) collectOnceSettled(globalThis.gc, { debug() {} }, 0);
     setTimeout(() => {
       let full = 0;
       new PerformanceObserver((list) => {
         for (const entry of list.getEntries()) if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) full++;
       }).observe({ entryTypes: ['gc'] });
       let step = 0;
       const more = () => {
         keep(4);
         if (++step < 13) setTimeout(more, 10);
         else setTimeout(() => process.stdout.write(String(full)), 50);
       };
       more();
     }, 100);`,
  );
  return Number(execFileSync(process.execPath, [...SHARD_EXEC_ARGV, script], { encoding: 'utf8' }));
};

describe('V8’s limit on external memory, as a shard process runs', () => {
  it('a process that never collected fully collects when a rush takes its buffers past 64 MB', () => {
    expect(rush(false)).toBeGreaterThanOrEqual(1);
  });

  it('collected once settled, the same rush passes without a full collection', () => {
    expect(rush(true)).toBe(0);
  });
});
