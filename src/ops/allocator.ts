import { existsSync, readFileSync } from 'node:fs';
import type { DoctorCheck } from './doctor-check.ts';

/**
 * Which memory allocator a process runs on, and where jemalloc is. Herald is faster on jemalloc: DAVE's library
 * (davey) allocates and frees for every voice frame, and glibc's malloc and free were a third of that call's CPU
 * (docs/performance.md). Preloading it (`LD_PRELOAD`) is an operator's choice made before Node starts; the container
 * image does it, `npm run doctor` says which one runs, and the bench runs Herald on it when it is installed.
 */

/** The allocators told apart; `glibc` is what runs when no other is loaded. */
export type Allocator = 'jemalloc' | 'mimalloc' | 'tcmalloc' | 'glibc';

/** Where Debian's `libjemalloc2` (and a container that links it) puts the library, on x86-64 and on ARM. */
export const JEMALLOC_PATHS: readonly string[] = [
  '/usr/local/lib/libjemalloc.so.2',
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/libjemalloc.so.2',
  '/usr/lib64/libjemalloc.so.2',
];

/** The first of {@link JEMALLOC_PATHS} that exists, if any. */
export function findJemalloc(exists: (path: string) => boolean = existsSync): string | undefined {
  return JEMALLOC_PATHS.find((path) => exists(path));
}

/** The allocator mapped into a process, from the text of its `/proc/<pid>/maps`. */
export function allocatorIn(maps: string): Allocator {
  if (/\/libjemalloc[^/\s]*\.so/.test(maps)) return 'jemalloc';
  if (/\/libmimalloc[^/\s]*\.so/.test(maps)) return 'mimalloc';
  if (/\/libtcmalloc[^/\s]*\.so/.test(maps)) return 'tcmalloc';
  return 'glibc';
}

/** The allocator of process `pid` (this one by default); undefined where `/proc` cannot be read (not Linux). */
export function allocatorOf(pid: number | 'self' = 'self'): Allocator | undefined {
  try {
    return allocatorIn(readFileSync(`/proc/${pid}/maps`, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * `npm run doctor`'s row for the allocator of its own process: Herald's too when it starts with the same
 * environment (`LD_PRELOAD` is inherited by the shard processes). Never a failure: glibc works, jemalloc is cheaper
 * with many voice connections.
 */
export function allocatorCheck(
  { allocator, jemalloc }: { allocator: Allocator | undefined; jemalloc: string | undefined } = {
    allocator: allocatorOf(),
    jemalloc: findJemalloc(),
  },
): DoctorCheck {
  const name = 'Memory allocator';
  if (allocator === undefined) return { name, status: 'ok', detail: 'not known here (no /proc to read)' };
  if (allocator !== 'glibc') return { name, status: 'ok', detail: `${allocator}, preloaded` };
  const how =
    jemalloc === undefined
      ? 'install jemalloc (Debian: apt install libjemalloc2) and start Herald with LD_PRELOAD set to it'
      : `start Herald with LD_PRELOAD=${jemalloc}`;
  return {
    name,
    status: 'ok',
    detail: `glibc's malloc; with hundreds of voice connections at once, ${how}: less CPU for every voice frame (the container image does this)`,
  };
}
