import { describe, expect, it } from 'vitest';
import type { DiscordEmulator } from '../../emulators/discord/index.ts';
import type { TtsEmulator } from '../../emulators/tts/index.ts';
import { createFaults, type FaultKind } from '../../soak/faults.ts';
import { createRandom } from '../../soak/prng.ts';
import { createTracker } from '../../soak/tracker.ts';

// The soak's database outage (Herald on PostgreSQL): the server stops, every server is excused while it is away and
// for Herald's bounded waits after, and it comes back.
describe('the soak’s database outage', () => {
  function setup(database: boolean) {
    const events: string[] = [];
    const tracker = createTracker({ servers: 2, silentMs: 10_000, stuckMs: 60_000 });
    const seeded = createRandom(7);
    const faults = createFaults({
      discord: {} as DiscordEmulator,
      tts: { requests: [], inject: () => events.push('tts') } as unknown as TtsEmulator,
      servers: [],
      // Every fault drawn is the outage when it can be drawn at all; the rest of the generator is seeded.
      random: {
        ...seeded,
        weighted: <K extends string>(weights: Readonly<Record<K, number>>): K =>
          ('database-outage' in weights ? 'database-outage' : 'tts-503') as K,
      },
      tracker,
      hinderMs: 30_000,
      log: (line) => events.push(line),
      database: database
        ? {
            halt: async () => {
              events.push('halt');
            },
            resume: async () => {
              events.push('resume');
            },
          }
        : undefined,
    });
    return { faults, tracker, events };
  }

  it('stops the database, excuses every server while it is away and 30 s after, and brings it back', async () => {
    const { faults, tracker, events } = setup(true);
    faults.inject(Date.now());
    expect(faults.databaseDown()).toBe(true);
    faults.inject(Date.now()); // one outage at a time
    expect(tracker.servers.map((server) => server.hinderedUntil)).toEqual([
      Number.POSITIVE_INFINITY,
      Number.POSITIVE_INFINITY,
    ]);
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (!faults.databaseDown()) {
          clearInterval(poll);
          resolve();
        }
      }, 50);
    });
    const back = Date.now();
    expect(events).toEqual(['halt', 'resume']);
    for (const server of tracker.servers) {
      expect(server.hinderedUntil).toBeGreaterThan(back + 25_000);
      expect(server.hinderedUntil).toBeLessThanOrEqual(back + 30_000);
    }
    expect(faults.counts()).toEqual({ 'database-outage': 1 } satisfies Partial<Record<FaultKind, number>>);
  }, 15_000);

  it('is never drawn on SQLite', () => {
    const { faults, events } = setup(false);
    faults.inject(Date.now());
    expect(faults.databaseDown()).toBe(false);
    expect(events).toEqual(['tts']);
  });
});
