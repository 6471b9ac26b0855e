import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createJoinQueue } from '../../src/voice/join-queue.ts';

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
});
afterEach(() => {
  vi.useRealTimers();
});

describe('join queue', () => {
  it('sends joins at once while the minute has room', () => {
    const queue = createJoinQueue({ perMinute: 3 });
    const sent: number[] = [];
    for (let i = 0; i < 3; i++) {
      const join = queue.schedule(() => sent.push(i));
      expect(join.dueAt).toBe(Date.now());
    }
    expect(sent).toEqual([0, 1, 2]);
    expect(queue.waiting).toBe(0);
  });

  it('holds joins beyond the rate, in order, until the window has room, and says how long they will wait', () => {
    const queue = createJoinQueue({ perMinute: 2 });
    const sent: string[] = [];
    queue.schedule(() => sent.push('a'));
    vi.advanceTimersByTime(10_000);
    queue.schedule(() => sent.push('b'));
    expect(queue.estimateWaitMs()).toBe(50_000);
    const c = queue.schedule(() => sent.push('c'));
    const d = queue.schedule(() => sent.push('d'));
    expect(sent).toEqual(['a', 'b']);
    expect(queue.waiting).toBe(2);
    // c takes a's slot a minute after a; d takes b's.
    expect(c.dueAt - Date.now()).toBe(50_000);
    expect(d.dueAt - Date.now()).toBe(60_000);
    // A fifth waits for the slot c frees, a minute after c is sent.
    expect(queue.estimateWaitMs()).toBe(110_000);

    vi.advanceTimersByTime(49_999);
    expect(sent).toEqual(['a', 'b']);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual(['a', 'b', 'c']);
    vi.advanceTimersByTime(10_000);
    expect(sent).toEqual(['a', 'b', 'c', 'd']);
    expect(queue.waiting).toBe(0);
  });

  it('never sends a cancelled join, and the next one takes its place', () => {
    const queue = createJoinQueue({ perMinute: 1 });
    const sent: string[] = [];
    queue.schedule(() => sent.push('a'));
    const b = queue.schedule(() => sent.push('b'));
    queue.schedule(() => sent.push('c'));
    b.cancel();
    expect(queue.waiting).toBe(1);
    vi.advanceTimersByTime(60_000);
    expect(sent).toEqual(['a', 'c']);
  });

  it('sends leaves after every waiting join, as the window has room (400 leaves at once held the joins for minutes)', () => {
    const queue = createJoinQueue({ perMinute: 2 });
    const sent: string[] = [];
    queue.leave('x', () => sent.push('leave x'));
    queue.schedule(() => sent.push('join a'), 'a');
    expect(sent).toEqual(['leave x', 'join a']);
    // The window is full: a leave asked now waits, and a join asked after it still goes first.
    queue.leave('y', () => sent.push('leave y'));
    queue.schedule(() => sent.push('join b'), 'b');
    expect(queue.leavesWaiting).toBe(1);
    // Leaves never delay a join: one asked now would go with b, at the minute.
    expect(queue.estimateWaitMs()).toBe(60_000);
    vi.advanceTimersByTime(59_999);
    expect(sent).toEqual(['leave x', 'join a']);
    // The minute frees both slots: the join first, then the leave.
    vi.advanceTimersByTime(1);
    expect(sent).toEqual(['leave x', 'join a', 'join b', 'leave y']);
    expect(queue.leavesWaiting).toBe(0);
  });

  it('holds a leave while a join waits for a handshake slot, though the window has room', () => {
    const queue = createJoinQueue({ perMinute: 10, maxHandshakes: 1 });
    const sent: string[] = [];
    const a = queue.schedule(() => sent.push('join a'), 'a');
    queue.schedule(() => sent.push('join b'), 'b');
    queue.leave('x', () => sent.push('leave x'));
    expect(sent).toEqual(['join a']);
    a.done();
    expect(sent).toEqual(['join a', 'join b', 'leave x']);
  });

  it('drops a waiting leave when a join for the same server is sent, and keeps only the newest leave of a server', () => {
    const queue = createJoinQueue({ perMinute: 1 });
    const sent: string[] = [];
    queue.schedule(() => sent.push('join a'), 'a');
    queue.leave('b', () => sent.push('leave b (old)'));
    queue.leave('b', () => sent.push('leave b'));
    queue.leave('a', () => sent.push('leave a'));
    expect(queue.leavesWaiting).toBe(2);
    // A join for a supersedes a's leave: Herald is to be in voice there.
    queue.schedule(() => sent.push('join a again'), 'a');
    vi.advanceTimersByTime(60_000);
    expect(sent).toEqual(['join a', 'join a again']);
    vi.advanceTimersByTime(60_000);
    expect(sent).toEqual(['join a', 'join a again', 'leave b']);
    vi.advanceTimersByTime(600_000);
    expect(sent).toEqual(['join a', 'join a again', 'leave b']);
  });

  it("a cancelled join does not drop its server's leave", () => {
    const queue = createJoinQueue({ perMinute: 1 });
    const sent: string[] = [];
    queue.schedule(() => sent.push('join x'), 'x');
    queue.leave('a', () => sent.push('leave a'));
    queue.schedule(() => sent.push('join a'), 'a').cancel();
    vi.advanceTimersByTime(60_000);
    expect(sent).toEqual(['join x', 'leave a']);
  });

  it('clear() sends every waiting leave (shutdown)', () => {
    const queue = createJoinQueue({ perMinute: 1 });
    const sent: string[] = [];
    queue.schedule(() => sent.push('join a'), 'a');
    queue.leave('b', () => sent.push('leave b'));
    queue.clear();
    expect(sent).toEqual(['join a', 'leave b']);
    expect(queue.leavesWaiting).toBe(0);
  });

  it('counts leaves in the window, and clear() drops every waiting join', () => {
    const queue = createJoinQueue({ perMinute: 2 });
    const sent: string[] = [];
    queue.leave('x', () => {});
    queue.leave('y', () => {});
    queue.schedule(() => sent.push('a'));
    expect(sent).toEqual([]);
    expect(queue.estimateWaitMs()).toBe(60_000);
    queue.clear();
    vi.advanceTimersByTime(120_000);
    expect(sent).toEqual([]);
    expect(queue.waiting).toBe(0);
  });

  it('holds joins while the handshakes in flight are at the bound, and sends the next as one finishes', () => {
    const queue = createJoinQueue({ perMinute: 100, maxHandshakes: 2 });
    const sent: string[] = [];
    const a = queue.schedule(() => sent.push('a'));
    queue.schedule(() => sent.push('b'));
    const c = queue.schedule(() => sent.push('c'));
    queue.schedule(() => sent.push('d'));
    expect(sent).toEqual(['a', 'b']);
    expect(queue.handshaking).toBe(2);
    expect(queue.waiting).toBe(2);
    expect(queue.busy).toBe(true);
    // Held by the handshakes, not by the rate: due now, and not sent (its connect deadline waits for the send).
    expect(c.sent).toBe(false);
    expect(c.dueAt).toBe(Date.now());
    expect(a.sent).toBe(true);
    // a's connection is ready: c goes; a reported twice frees nothing more.
    a.done();
    a.done();
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(c.sent).toBe(true);
    expect(queue.handshaking).toBe(2);
    // Nobody reports b or c: their lease frees the slots, so a lost report never stalls every join.
    vi.advanceTimersByTime(19_999);
    expect(sent).toEqual(['a', 'b', 'c']);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual(['a', 'b', 'c', 'd']);
    // Only d handshakes now, of two allowed, and nothing waits.
    expect(queue.handshaking).toBe(1);
    expect(queue.busy).toBe(false);
  });

  it('a join cancelled before it was sent never holds a handshake slot', () => {
    const queue = createJoinQueue({ perMinute: 100, maxHandshakes: 1 });
    const sent: string[] = [];
    const a = queue.schedule(() => sent.push('a'));
    const b = queue.schedule(() => sent.push('b'));
    queue.schedule(() => sent.push('c'));
    b.cancel();
    a.cancel(); // the session ended mid-handshake
    expect(sent).toEqual(['a', 'c']);
    expect(queue.handshaking).toBe(1);
  });
});
