/** How the bench rounds its figures (bench/bench.ts). */
import { describe, expect, it } from 'vitest';
import { round } from '../../bench/common.ts';

describe('round', () => {
  it('rounds to the digits asked for', () => {
    expect(round(1.2345, 2)).toBe(1.23);
    expect(round(-23.26, 1)).toBe(-23.3);
  });

  it('never gives -0, which the JSON result file would write as 0', () => {
    // A lateness median of -0.04 ms: a packet a hair ahead of its slot.
    expect(Object.is(round(-0.04, 1), 0)).toBe(true);
    expect(Object.is(round(-0, 3), 0)).toBe(true);
  });
});
