/**
 * What the sharding manager's status page shows live: every shard's voice sessions, latest problems and gateway,
 * gathered over IPC (see ipc.ts) and merged with the manager's own problems. The budget and the ledger are not
 * here: the manager reads them from the one shared database.
 */
import type { LiveView, RecentProblem, ShardView } from '../ops/index.ts';
import type { ShardReply, ShardStatus } from './ipc.ts';

/** How many problems the manager's page lists, newest first, from every shard and the manager together. */
export const PROBLEMS_SHOWN = 20;

/**
 * Merges the shards' replies (in shard order) and the manager's own problems into one view: each session and
 * problem says its shard, each shard says what it answered, why it did not, or that it stands by, and the gateway
 * counts as connected only when every shard answered that its own is.
 */
export function mergeShardStatus(
  replies: readonly ShardReply<ShardStatus>[],
  managerProblems: readonly RecentProblem[],
  /** Shards not asked, standing by for their leases: id → what to say (who runs them meanwhile). */
  standingBy: ReadonlyMap<number, string> = new Map(),
): LiveView {
  const shardIds = [...new Set([...replies.map((reply) => reply.id), ...standingBy.keys()])].sort(
    (a, b) => a - b,
  );
  const replyOf = new Map(replies.map((reply) => [reply.id, reply]));
  const shards: ShardView[] = shardIds.map((id): ShardView => {
    const reply = replyOf.get(id);
    if (!reply) return { id, status: 'standing-by', detail: standingBy.get(id) ?? '' };
    return reply.ok
      ? {
          id: reply.id,
          status: 'answered',
          gatewayConnected: reply.value.gatewayConnected,
          sessions: reply.value.sessions.length,
        }
      : { id: reply.id, status: 'silent', detail: reply.detail };
  });
  const answered = replies.flatMap((reply) => (reply.ok ? [{ id: reply.id, ...reply.value }] : []));
  const problems = [
    ...managerProblems.map((problem) => ({ ...problem, shard: 'manager' as const })),
    ...answered.flatMap(({ id, problems }) => problems.map((problem) => ({ ...problem, shard: id }))),
  ]
    // Stable: problems logged in the same millisecond keep their own shard's order.
    .sort((a, b) => b.at - a.at)
    .slice(0, PROBLEMS_SHOWN);
  return {
    sessions: answered.flatMap(({ id, sessions }) => sessions.map((session) => ({ ...session, shard: id }))),
    problems,
    gatewayConnected:
      shards.length > 0 && shards.every((shard) => shard.status === 'answered' && shard.gatewayConnected),
    shards,
  };
}
