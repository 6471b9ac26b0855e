/** The soak's judgement of Herald's open files (soak/memory.ts): growth is a leak, a dip is not. */
import { describe, expect, it } from 'vitest';
import { type MemorySample, memoryOf } from '../../soak/memory.ts';

/** A 60-minute run sampled every 5 s, its open files given by minute. */
const run = (fdsAt: (minute: number) => number): MemorySample[] =>
  Array.from({ length: 720 }, (_, i) => {
    const t = i * 5_000;
    return { t, rss: 500, fds: fdsAt(t / 60_000), heap: 80 };
  });

describe('memoryOf: open files', () => {
  it('holds when the count is flat but for a dip where the warm-up ends (sessions ending at once)', () => {
    const { violations } = memoryOf(
      run((minute) => (minute >= 19.8 && minute < 21 ? 137 : 180 + Math.round(12 * Math.sin(minute)))),
      60,
    );
    expect(violations).toEqual([]);
  });

  it('is violated when the count climbs after the warm-up, as a leaked socket per utterance would', () => {
    const { violations } = memoryOf(
      run((minute) => 180 + Math.max(0, Math.round((minute - 20) * 3))),
      60,
    );
    expect(violations).toEqual([expect.stringMatching(/^open files grew from \d+ to \d+ after the warm-up/)]);
  });
});
