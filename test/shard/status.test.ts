import { describe, expect, it } from 'vitest';
import type { RecentProblem, SessionView } from '../../src/ops/index.ts';
import type { ShardReply, ShardStatus } from '../../src/shard/ipc.ts';
import { mergeShardStatus, PROBLEMS_SHOWN } from '../../src/shard/status.ts';

const session = (guildId: string): SessionView => ({
  guildId,
  guildName: `Server ${guildId}`,
  channelName: 'Room',
  queueDepth: 1,
  connection: 'ready',
  player: 'playing',
});
const problem = (at: number, message: string): RecentProblem => ({
  at,
  level: 'warn',
  message,
  detail: undefined,
});
const answered = (id: number, value: Partial<ShardStatus> = {}): ShardReply<ShardStatus> => ({
  id,
  ok: true,
  value: { sessions: [], problems: [], gatewayConnected: true, ...value },
});

describe('mergeShardStatus', () => {
  it("lists every shard's sessions and problems with their shard, problems newest first", () => {
    const live = mergeShardStatus(
      [
        answered(0, { sessions: [session('10')], problems: [problem(300, 'a'), problem(100, 'b')] }),
        answered(1, { sessions: [session('11'), session('12')], problems: [problem(200, 'c')] }),
      ],
      [problem(250, 'shard 1 died')],
    );
    expect(live.sessions.map((s) => [s.guildId, s.shard])).toEqual([
      ['10', 0],
      ['11', 1],
      ['12', 1],
    ]);
    expect(live.problems.map((p) => [p.message, p.shard])).toEqual([
      ['a', 0],
      ['shard 1 died', 'manager'],
      ['c', 1],
      ['b', 0],
    ]);
    expect(live.gatewayConnected).toBe(true);
    expect(live.shards).toEqual([
      { id: 0, status: 'answered', gatewayConnected: true, sessions: 1 },
      { id: 1, status: 'answered', gatewayConnected: true, sessions: 2 },
    ]);
  });

  it.each([
    {
      name: 'a shard that did not answer',
      replies: [answered(0), { id: 1, ok: false, detail: 'shard 1 did not answer within 5000 ms' } as const],
      shard1: { id: 1, status: 'silent', detail: 'shard 1 did not answer within 5000 ms' },
    },
    {
      name: 'a shard whose gateway is down',
      replies: [answered(0), answered(1, { gatewayConnected: false })],
      shard1: { id: 1, status: 'answered', gatewayConnected: false, sessions: 0 },
    },
  ])('counts the gateway as not connected with $name, and says so for that shard', ({ replies, shard1 }) => {
    const live = mergeShardStatus(replies, []);
    expect(live.gatewayConnected).toBe(false);
    expect(live.shards?.[1]).toEqual(shard1);
    expect(live.shards?.[0]).toMatchObject({ status: 'answered', gatewayConnected: true });
  });

  it('lists a shard standing by in its place, saying who runs it, and not as connected', () => {
    const live = mergeShardStatus(
      [answered(0), answered(2)],
      [],
      new Map([[1, 'Standing by: another Herald runs these shards (shard 1 of 3 on b, pid 7).']]),
    );
    expect(live.shards).toEqual([
      { id: 0, status: 'answered', gatewayConnected: true, sessions: 0 },
      {
        id: 1,
        status: 'standing-by',
        detail: 'Standing by: another Herald runs these shards (shard 1 of 3 on b, pid 7).',
      },
      { id: 2, status: 'answered', gatewayConnected: true, sessions: 0 },
    ]);
    expect(live.gatewayConnected).toBe(false);
  });

  it('keeps the newest problems only, and is not connected with no shard at all', () => {
    const many = Array.from({ length: PROBLEMS_SHOWN }, (_, i) => problem(i, `p${i}`));
    const live = mergeShardStatus([answered(0, { problems: many }), answered(1, { problems: many })], []);
    expect(live.problems).toHaveLength(PROBLEMS_SHOWN);
    expect(live.problems[0]?.at).toBe(PROBLEMS_SHOWN - 1);
    expect(mergeShardStatus([], []).gatewayConnected).toBe(false);
  });
});
