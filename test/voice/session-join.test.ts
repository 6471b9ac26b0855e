/**
 * A GuildSession whose join waits in the join queue: the join payload reaches the gateway only when the queue
 * sends it, the member can be told how long that is, and the 15 s connect deadline starts at the send, not at
 * the /speak (the bug: "Speaking now", then "could not connect" while discord.js still held the join).
 */
import type { DiscordGatewayAdapterCreator } from '@discordjs/voice';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { createJoinQueue } from '../../src/voice/join-queue.ts';
import { GuildSession, type SessionEnd } from '../../src/voice/session.ts';

const silentLogger = createLogger({ level: 'error', write: () => {} });

/** An adapter that records what the library asks the gateway to send, and never answers. */
function recordingAdapter(sent: unknown[]): DiscordGatewayAdapterCreator {
  return () => ({
    sendPayload: (payload) => {
      sent.push(payload);
      return true;
    },
    destroy: () => {},
  });
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('GuildSession with a join queue', () => {
  it('sends a held join when the queue has room and starts the connect deadline then', () => {
    // Two gateway commands a minute, one already spent (a leave): room for one join now, the next in 60 s.
    const joinQueue = createJoinQueue({ perMinute: 2 });
    joinQueue.leave('guild-elsewhere', () => {});
    const sessions: GuildSession[] = [];
    const ends: { guild: string; reason: SessionEnd }[] = [];
    const sent: Record<string, unknown[]> = { a: [], b: [] };
    for (const guild of ['a', 'b'] as const) {
      sessions.push(
        new GuildSession({
          guildId: `guild-${guild}`,
          channelId: `channel-${guild}`,
          adapterCreator: recordingAdapter(sent[guild] ?? []),
          synthesize: () => Promise.reject(new Error('nothing is synthesised in this test')),
          pacing: { record: () => {}, leadMs: () => 500 },
          limits: { perServer: 5, perMember: 5 },
          logger: silentLogger,
          idleTimeoutMs: 600_000,
          connectTimeoutMs: 15_000,
          joinQueue,
          onEnd: (reason) => ends.push({ guild, reason }),
        }),
      );
    }
    const [first, second] = sessions as [GuildSession, GuildSession];
    expect(sent.a).toHaveLength(1);
    expect(sent.b).toHaveLength(0);
    // a's join is sent, but with b waiting behind it this is a burst: a member is told to expect a few seconds.
    expect(first.joinWaitMs()).toBe(3_000);
    expect(second.joinWaitMs()).toBe(60_000);

    // Discord never answers either join: the first fails 15 s after it was sent; its leave waits behind b's join
    // (nobody waits for a leave). The second is still waiting, with no deadline running.
    vi.advanceTimersByTime(15_000);
    expect(ends).toEqual([{ guild: 'a', reason: 'connection-failed' }]);
    expect(second.ended).toBe(false);
    expect(sent.a).toHaveLength(1);
    expect(joinQueue.leavesWaiting).toBe(1);

    vi.advanceTimersByTime(45_000);
    expect(sent.b).toHaveLength(1);
    expect(sent.a).toEqual([
      expect.anything(),
      expect.objectContaining({ d: expect.objectContaining({ channel_id: null }) }),
    ]);
    expect(second.joinWaitMs()).toBe(0);
    vi.advanceTimersByTime(14_999);
    expect(second.ended).toBe(false);
    vi.advanceTimersByTime(1);
    expect(ends).toEqual([
      { guild: 'a', reason: 'connection-failed' },
      { guild: 'b', reason: 'connection-failed' },
    ]);
  });

  it('keeps an idle session in voice while joins wait for the gateway, then leaves', () => {
    // Two gateway commands a minute: a's and b's joins spend them, c's waits a minute for the window.
    const joinQueue = createJoinQueue({ perMinute: 2 });
    const ends: { guild: string; reason: SessionEnd }[] = [];
    const sessions = (['a', 'b', 'c'] as const).map(
      (guild) =>
        new GuildSession({
          guildId: `guild-${guild}`,
          channelId: `channel-${guild}`,
          adapterCreator: recordingAdapter([]),
          synthesize: () => Promise.reject(new Error('nothing is synthesised in this test')),
          pacing: { record: () => {}, leadMs: () => 500 },
          limits: { perServer: 5, perMember: 5 },
          logger: silentLogger,
          idleTimeoutMs: guild === 'c' ? 600_000 : 1_000,
          connectTimeoutMs: 600_000,
          joinQueue,
          onEnd: (reason) => ends.push({ guild, reason }),
        }),
    );
    expect(joinQueue.waiting).toBe(1);
    // Idle, but a leave now would take c's turn at the gateway: a and b stay.
    vi.advanceTimersByTime(30_000);
    expect(ends).toEqual([]);
    // c's join goes at the minute; a and b leave at their next try.
    vi.advanceTimersByTime(30_000);
    expect(joinQueue.waiting).toBe(0);
    vi.advanceTimersByTime(10_000);
    expect(ends).toEqual([
      { guild: 'a', reason: 'idle' },
      { guild: 'b', reason: 'idle' },
    ]);
    expect(sessions[2]?.ended).toBe(false);
  });
});
