import { describe, expect, it } from 'vitest';
import { firstSightOnly } from '../../src/discord/first-sight.ts';

describe('firstSightOnly', () => {
  it('hands an id seen within the window to onRepeat, and forgets it after', () => {
    const clock = { now: 0 };
    const handled: string[] = [];
    const repeated: string[] = [];
    const once = firstSightOnly(
      (id: string) => id,
      (id) => {
        handled.push(id);
      },
      (id) => repeated.push(id),
      { ttlMs: 1_000, now: () => clock.now },
    );
    once('a');
    once('b');
    clock.now = 999;
    once('a');
    clock.now = 1_000;
    once('a');
    once('b');
    expect(handled).toEqual(['a', 'b', 'a', 'b']);
    expect(repeated).toEqual(['a']);
  });
});
