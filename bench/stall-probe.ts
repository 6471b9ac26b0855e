/**
 * Where a shard process's loop stood still: preloaded into Herald's processes, it notes every stall of its event
 * loop over 40 ms (a 5 ms timer that fired late, with the thread's CPU time over the gap: little CPU means the process
 * was waiting for a core, much means work of its own), every garbage collection over 4 ms (its kind and wall
 * time), and once a second its heap, its `ArrayBuffer`s and the external memory V8 counts (now, and the most at any
 * probe of that second): V8 starts a full collection on the growth of external memory, however much room its old
 * generation has (64 MB in a process alone; in a shard process's rush, at 40-50 MB). When the process exits it writes
 * `stall-probe-<pid>.json` (the events, by time since the epoch) to STALL_PROBE_DIR (default: the system's temporary
 * folder) and prints one line of totals. The probe itself costs
 * a timer every 5 ms, so compare runs that both have it. Run:
 * `npm run bench -- --quick --servers=1000 --seconds=10 --cold=2 --shards=4 --tts=at-once --nice=0 --cache=on
 *  --node-flags="--import=./bench/stall-probe.ts"`.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

const STALL_MS = 40;
const PROBE_MS = 5;
const GC_MS = 4;

type ProbeEvent =
  | { readonly at: number; readonly stall: number; readonly cpuMs: number }
  | { readonly at: number; readonly gc: string; readonly ms: number }
  | {
      readonly at: number;
      readonly heapMb: number;
      readonly arrayBuffersMb: number;
      readonly externalMb: number;
      readonly externalPeakMb: number;
    };

const events: ProbeEvent[] = [];
const cpuMs = (): number => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

let last = performance.now();
let lastCpu = cpuMs();
/** The most external memory V8 counted at any probe of the current second: a collection starts on its peak. */
let externalPeak = 0;
const external = (): number => (getHeapStatistics() as { external_memory?: number }).external_memory ?? 0;
setInterval(() => {
  externalPeak = Math.max(externalPeak, external());
  const now = performance.now();
  const cpu = cpuMs();
  if (now - last > STALL_MS) {
    events.push({ at: Date.now(), stall: round(now - last), cpuMs: round(cpu - lastCpu) });
  }
  last = now;
  lastCpu = cpu;
}, PROBE_MS).unref();

setInterval(() => {
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  events.push({
    at: Date.now(),
    heapMb: mb(heapUsed),
    arrayBuffersMb: mb(arrayBuffers),
    externalMb: mb(external()),
    externalPeakMb: mb(externalPeak),
  });
  externalPeak = 0;
}, 1000).unref();

const kinds: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.duration <= GC_MS) continue;
    const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1;
    events.push({
      at: Math.round(performance.timeOrigin + entry.startTime),
      gc: kinds[kind] ?? String(kind),
      ms: round(entry.duration),
    });
  }
}).observe({ entryTypes: ['gc'] });

process.on('exit', () => {
  const count = (gc: string) => {
    const of = events.filter((e) => 'gc' in e && e.gc === gc) as { ms: number }[];
    return `${of.length} (${of.reduce((sum, e) => sum + e.ms, 0).toFixed(0)} ms)`;
  };
  const stalls = events.filter((e) => 'stall' in e).length;
  const file = join(process.env.STALL_PROBE_DIR ?? tmpdir(), `stall-probe-${process.pid}.json`);
  writeFileSync(file, `${JSON.stringify({ pid: process.pid, events })}\n`);
  process.stderr.write(
    `stall probe (pid ${process.pid}): ${stalls} stalls over ${STALL_MS} ms; collections over ${GC_MS} ms: major ${count('major')}, minor ${count('minor')}; ${file}\n`,
  );
});

function mb(bytes: number): number {
  return round(bytes / 1024 / 1024);
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
