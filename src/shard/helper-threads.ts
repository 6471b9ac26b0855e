/**
 * V8's helper threads (garbage collection, background compilation): Node gives every process a pool of
 * {@link NODE_DEFAULT_V8_POOL_SIZE}. Four shard processes on two cores are then sixteen helpers beside four main
 * threads, and a burst of concurrent marking in a few processes at once holds the other processes' audio cycles off
 * the cores: in a rush of 1,000 utterances on two cores nearly every stall of a shard's 20 ms audio cycle (40–340
 * ms) was the process waiting for a core, not busy (docs/rush.md). So each shard process gets its share of the
 * machine's cores as its pool: one on two cores with four shards.
 */

/** Node's own `--v8-pool-size` when none is given. */
export const NODE_DEFAULT_V8_POOL_SIZE = 4;

/** The flag that sizes V8's pool (Node's option). */
const POOL_FLAG = '--v8-pool-size';

/**
 * The Node flags each of `processes` shard processes on a machine of `cores` is started with: `--v8-pool-size` at
 * the process's share of the cores (at least 1, never more than Node's default). None when the operator sized the
 * pool (in `NODE_OPTIONS` or the manager's own flags): theirs applies.
 */
export function shardExecArgv(options: {
  readonly cores: number;
  readonly processes: number;
  /** `process.env.NODE_OPTIONS`. */
  readonly nodeOptions: string | undefined;
  /** `process.execArgv`. */
  readonly execArgv: readonly string[];
}): string[] {
  const given = [...(options.nodeOptions ?? '').split(/\s+/), ...options.execArgv];
  if (given.some((flag) => flag === POOL_FLAG || flag.startsWith(`${POOL_FLAG}=`))) return [];
  const share = Math.floor(options.cores / Math.max(1, options.processes));
  const size = Math.min(NODE_DEFAULT_V8_POOL_SIZE, Math.max(1, share));
  return size === NODE_DEFAULT_V8_POOL_SIZE ? [] : [`${POOL_FLAG}=${size}`];
}
