import { describe, expect, it } from 'vitest';
import { createTracker, TELL_GRACE_MS } from '../../soak/tracker.ts';

// The soak's invariants, decided on a clock the test holds: what counts as heard, told, silent and stuck.
function world() {
  const tracker = createTracker({ servers: 1, silentMs: 10_000, stuckMs: 60_000 });
  let followUps = 0;
  const speak = (tone: number, at: number) => {
    const item = tracker.sent({
      guild: 0,
      tag: `t${tone}`,
      tone,
      sentAt: at,
      followUps: () => followUps,
      refusal: undefined,
    });
    tracker.accepted(item, at);
    return item;
  };
  const frames = (tone: number, n: number, at: number) => {
    for (let i = 0; i < n; i++) tracker.frame(0, tone, at);
  };
  return {
    tracker,
    speak,
    frames,
    tellAll: () => {
      followUps = 1;
    },
  };
}

describe('the soak tracker', () => {
  it('an utterance whose voice is heard for three frames is heard; a stray frame or two is not', () => {
    const { tracker, speak, frames } = world();
    const item = speak(500, 0);
    frames(500, 2, 100);
    expect(item.outcome).toBeUndefined();
    frames(500, 1, 120);
    expect(item.outcome).toBe('heard');
    expect(tracker.incidents).toEqual([]);
  });

  it('passed over by a later one without a sound: told within the grace, or a violation', () => {
    const told = world();
    const a = told.speak(500, 0);
    told.speak(700, 0);
    told.frames(700, 3, 1_000);
    told.tellAll();
    told.tracker.tick(2_000);
    expect(a.outcome).toBe('failed-told');

    const silent = world();
    const b = silent.speak(500, 0);
    silent.speak(700, 0);
    silent.frames(700, 3, 1_000);
    silent.tracker.tick(1_000 + TELL_GRACE_MS + 1);
    expect(b.outcome).toBe('not-heard-not-told');
  });

  it('a /skip excuses the one it dropped', () => {
    const { tracker, speak, frames } = world();
    const a = speak(500, 0);
    speak(700, 0);
    tracker.skipped(0, 500);
    frames(700, 3, 1_000);
    tracker.tick(1_000 + TELL_GRACE_MS + 1);
    expect(a.outcome).toBe('dropped');
  });

  it('silent past 10 s with a /speak waiting is an incident; a fault excuses it for its bounded wait, not for a minute', () => {
    const quiet = world();
    quiet.speak(500, 0);
    quiet.tracker.tick(10_000);
    expect(quiet.tracker.incidents).toEqual([]);
    quiet.tracker.tick(10_001);
    expect(quiet.tracker.incidents).toMatchObject([{ kind: 'silent', pending: 1 }]);

    const faulted = world();
    faulted.speak(500, 0);
    faulted.tracker.hinder(0, 30_000);
    faulted.tracker.tick(20_000);
    expect(faulted.tracker.incidents).toEqual([]);
    faulted.tracker.hinder(0, Number.POSITIVE_INFINITY);
    faulted.tracker.tick(60_001);
    expect(faulted.tracker.incidents).toMatchObject([{ kind: 'stuck' }]);
  });

  it('progress (frames of anything) restarts the clock; the end sentence of a session tells everyone waiting', () => {
    const { tracker, speak, frames } = world();
    const item = speak(500, 0);
    frames(300, 1, 9_000);
    tracker.tick(18_000);
    expect(tracker.incidents).toEqual([]);
    tracker.sessionEnded(0, 18_500);
    expect(item.outcome).toBe('ended-told');
  });
});
