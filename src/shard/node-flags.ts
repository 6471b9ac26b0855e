/**
 * The Node flags every shard process runs with: the manager passes them when it spawns (and respawns) one.
 *
 * Room in V8's old generation before its first full collection (issue 44). A process's old generation starts
 * small, and after each full collection its next limit is set from what survived. A shard process's heap grows from
 * about 45 MB to about 90 MB while 250 of its servers start speaking at once. With the default, the four shard
 * processes made about a dozen full collections in the 1,000-server rush's 11 s (24–35 over a bench run), each
 * 10–120 ms. In that time the process's streams' packets waited, and V8's helper threads marking the heap took cores
 * the four processes were already sharing. With 256 MB they made about one each in the rush (the one that growing
 * buffers ask for), 4–5 over a run. With the audio cache on (its default), three alternating pairs gave 0.45–0.84 %
 * late packets against 0.80–2.05 %. With 128 MB they made about two each, and the result was between the two. With
 * the cache off there is a cost: 0.56–1.31 % late against 0.14–0.35 %. The four processes' one collection of the rush
 * most likely falls within a second in all four, where the default's smaller ones are spread out (docs/rush.md,
 * "Room in the old generation", `bench/stall-probe.ts`).
 *
 * The other cost is memory. The old generation fills with garbage up to this size before a process first collects
 * it, so a busy shard process holds up to about this much more than it would. That fits in the 512 MB each process
 * `SHARD_PROCESSES=auto` is given (SHARD_PROCESS_MEMORY_BYTES). The single process of `npm start` keeps the default:
 * a bot of a few dozen servers never meets a rush of hundreds, and it keeps its smaller footprint.
 */

/** The old generation's first limit in each shard process, MB. */
export const SHARD_OLD_SPACE_MB = 256;

/**
 * What the manager runs each shard process's script with. `--expose-gc`: the one full collection a shard process
 * makes once it has started (src/shard/settle-collection.ts), without which that room leaves V8's limit on external
 * memory at 64 MB outright, and a rush crosses it in every process at once.
 */
export const SHARD_EXEC_ARGV: readonly string[] = [
  `--initial-old-space-size=${SHARD_OLD_SPACE_MB}`,
  '--expose-gc',
];
