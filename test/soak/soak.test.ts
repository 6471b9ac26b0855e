import { describe, expect, it } from 'vitest';
import { runSoak } from '../../soak/run.ts';
import { formatSummary } from '../../soak/summary.ts';

// Three minutes of the soak run (npm run soak) inside the test command: random traffic and faults from both
// emulators against Herald's own process, every invariant checked. A failure prints the seed to replay it with
// `npm run soak -- --minutes 3 --servers 20 --seed N`.
describe('the soak run (3 minutes)', () => {
  it('keeps every invariant under random traffic and faults', { timeout: 330_000 }, async () => {
    const seed = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`soak seed ${seed}`);
    const result = await runSoak({ minutes: 3, servers: 20, seed });
    console.log(formatSummary(result));
    expect(result.speak.sent).toBeGreaterThan(20);
    expect(result.speak.outcomes.heard).toBeGreaterThan(0);
    expect(Object.values(result.faults).reduce((sum, n) => sum + (n ?? 0), 0)).toBeGreaterThan(0);
    expect(result.voice?.packets).toBeGreaterThan(0);
    expect(result.violations).toEqual([]);
  });
});
