/** The start gate (src/rush/start-gate.ts): order, yielding to a loop that is behind, nothing lost, aborts. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createStartGate, type Release } from '../../src/rush/index.ts';

/** How late the gate's clock says each probe fired (ms): the test plays a busy event loop with it. */
let lagMs = 0;
const gateWith = (
  options: {
    maxRunning?: number;
    maxLagMs?: number;
    maxHoldMs?: number;
    machineBusy?: () => boolean;
    answering?: () => boolean;
  } = {},
) =>
  createStartGate({ probeMs: 5, maxLagMs: 10, maxHoldMs: 1_000, ...options, now: () => Date.now() + lagMs });

/** Enters `count` starts in order; `through` lists the indexes let through, in the order they were. */
function enterMany(gate: ReturnType<typeof createStartGate>, count: number) {
  const through: number[] = [];
  const releases = new Map<number, Release>();
  for (let i = 0; i < count; i++) {
    void gate.enter().then((release) => {
      through.push(i);
      releases.set(i, release);
    });
  }
  return { through, releases };
}

beforeEach(() => {
  vi.useFakeTimers();
  lagMs = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

describe('createStartGate', () => {
  it('lets a lone start through at once, without waiting for a probe', async () => {
    const gate = gateWith();
    const release = await gate.enter();
    expect(gate.running).toBe(1);
    release();
    release();
    expect(gate.running).toBe(0);
  });

  it('lets starts through in the order they entered, one per probe that fired on time', async () => {
    const gate = gateWith();
    const { through } = enterMany(gate, 5);
    await vi.advanceTimersByTimeAsync(0);
    // The first at once; the others each after a probe, never two at a time.
    expect(through).toEqual([0]);
    await vi.advanceTimersByTimeAsync(5);
    expect(through).toEqual([0, 1]);
    await vi.advanceTimersByTimeAsync(15);
    expect(through).toEqual([0, 1, 2, 3, 4]);
    expect(gate.running).toBe(5);
    expect(gate.waiting).toBe(0);
  });

  it('lets nobody through while the loop is behind, and goes on once it keeps time again', async () => {
    const gate = gateWith();
    const { through } = enterMany(gate, 3);
    await vi.advanceTimersByTimeAsync(0);
    lagMs = 11;
    // The clock jumps 11 ms between a probe's arming and its firing only once; keep every probe late.
    for (let i = 0; i < 10; i++) {
      lagMs += 11;
      await vi.advanceTimersByTimeAsync(5);
    }
    expect(through).toEqual([0]);
    expect(gate.waiting).toBe(2);
    await vi.advanceTimersByTimeAsync(5);
    await vi.advanceTimersByTimeAsync(5);
    expect(through).toEqual([0, 1, 2]);
  });

  it('lets nobody through while the machine has no idle time, however on time its probes, but the floor', async () => {
    let machineBusy = true;
    const gate = gateWith({ maxHoldMs: 100, machineBusy: () => machineBusy });
    const { through } = enterMany(gate, 4);
    await vi.advanceTimersByTimeAsync(0);
    // Every probe on time, the machine busy: only the floor lets one through, 100 ms after the first went.
    await vi.advanceTimersByTimeAsync(95);
    expect(through).toEqual([0]);
    await vi.advanceTimersByTimeAsync(10);
    expect(through).toEqual([0, 1]);
    machineBusy = false;
    await vi.advanceTimersByTimeAsync(10);
    expect(through).toEqual([0, 1, 2, 3]);
  });

  it('holds starts for a second, not a tenth, while the process answers interactions on a busy machine', async () => {
    let answering = true;
    let machineBusy = true;
    const gate = gateWith({ maxHoldMs: 100, machineBusy: () => machineBusy, answering: () => answering });
    const { through } = enterMany(gate, 4);
    await vi.advanceTimersByTimeAsync(0);
    // Even the first waits (its first packets would go out behind the answers), a second at the most.
    await vi.advanceTimersByTimeAsync(990);
    expect(through).toEqual([]);
    await vi.advanceTimersByTimeAsync(15);
    expect(through).toEqual([0]);
    // Answered: the floor is a tenth again.
    answering = false;
    await vi.advanceTimersByTimeAsync(105);
    expect(through).toEqual([0, 1]);
    // Still answering, but the machine has idle time: probes on time let starts through as ever.
    answering = true;
    machineBusy = false;
    await vi.advanceTimersByTimeAsync(10);
    expect(through).toEqual([0, 1, 2, 3]);
  });

  it('lets a lone start through at once while the process answers on a machine with idle time', async () => {
    const gate = gateWith({ maxHoldMs: 100, machineBusy: () => false, answering: () => true });
    const { through } = enterMany(gate, 1);
    await vi.advanceTimersByTimeAsync(0);
    expect(through).toEqual([0]);
  });

  it('still lets one through every maxHoldMs when every probe is late (a machine that gives it no core)', async () => {
    const gate = gateWith({ maxHoldMs: 100 });
    const { through } = enterMany(gate, 4);
    await vi.advanceTimersByTimeAsync(0);
    // Every probe 11 ms late: the gate's clock moves 16 ms a probe, so the floor lets one through every 7 probes.
    const lateProbes = async (count: number) => {
      for (let i = 0; i < count; i++) {
        lagMs += 11;
        await vi.advanceTimersByTimeAsync(5);
      }
    };
    await lateProbes(6);
    expect(through).toEqual([0]);
    await lateProbes(4);
    expect(through).toEqual([0, 1]);
    await lateProbes(7);
    expect(through).toEqual([0, 1, 2]);
  });

  it('holds the rest at maxRunning until a start releases, then lets the next in order through', async () => {
    const gate = gateWith({ maxRunning: 2 });
    const { through, releases } = enterMany(gate, 4);
    await vi.advanceTimersByTimeAsync(100);
    expect(through).toEqual([0, 1]);
    releases.get(1)?.();
    await vi.advanceTimersByTimeAsync(100);
    expect(through).toEqual([0, 1, 2]);
    releases.get(0)?.();
    releases.get(0)?.();
    await vi.advanceTimersByTimeAsync(100);
    expect(through).toEqual([0, 1, 2, 3]);
    expect(gate.running).toBe(2);
  });

  it('loses nobody: every one of many starts, released as they come, is let through once', async () => {
    const gate = gateWith({ maxRunning: 3 });
    const seen: number[] = [];
    const all = Array.from({ length: 50 }, (_, i) =>
      gate.enter().then((release) => {
        seen.push(i);
        // Each releases a little later, some in the same turn.
        setTimeout(release, i % 3 === 0 ? 0 : 7);
      }),
    );
    await vi.advanceTimersByTimeAsync(2_000);
    await Promise.all(all);
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(gate.running).toBe(0);
    expect(gate.waiting).toBe(0);
  });

  it('drops a start whose signal aborts while it waits, and the ones behind it still go', async () => {
    const gate = gateWith();
    const first = await gate.enter();
    const abort = new AbortController();
    const dropped = gate.enter(abort.signal);
    const after = gate.enter();
    abort.abort(new Error('skipped'));
    await expect(dropped).rejects.toThrow('skipped');
    expect(gate.waiting).toBe(1);
    await vi.advanceTimersByTimeAsync(5);
    await expect(after).resolves.toBeTypeOf('function');
    expect(gate.running).toBe(2);
    first();
    // Aborted before it entered: refused at once, holding nothing.
    await expect(gate.enter(abort.signal)).rejects.toThrow('skipped');
  });
});
