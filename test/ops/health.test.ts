import { describe, expect, it } from 'vitest';
import { checkReadiness, type ReadinessProbes } from '../../src/ops/index.ts';

const probes = (overrides: Partial<ReadinessProbes> = {}): ReadinessProbes => ({
  gatewayConnected: () => true,
  database: () => {},
  tts: async () => [],
  budget: () => ({
    status: 'active',
    balanceUsd: 9.5,
    balanceSeenAt: 0,
    floorUsd: 1,
    warnUsd: undefined,
    pricePerCharUsd: 0.0001,
    priceSource: 'learned',
    memberCharsPerMinute: 5000,
    inFlight: 0,
    reservedUsd: 0,
    uncertain: { generations: 0, upToUsd: 0 },
  }),
  ...overrides,
});

describe('checkReadiness', () => {
  it('is ready when every check is', async () => {
    expect(await checkReadiness(probes())).toEqual({
      ready: true,
      checks: { gateway: { ok: true }, database: { ok: true }, tts: { ok: true }, budget: { ok: true } },
    });
  });

  it('fails the database and budget checks, not the whole answer, when the database is down', async () => {
    // PostgreSQL stopped: the probe and the budget's state (read from the same database) both reject.
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    const readiness = await checkReadiness(
      probes({ database: () => Promise.reject(refused), budget: () => Promise.reject(refused) }),
    );
    expect(readiness).toEqual({
      ready: false,
      checks: {
        gateway: { ok: true },
        database: { ok: false, detail: 'The database does not answer: connect ECONNREFUSED 127.0.0.1:5432' },
        tts: { ok: true },
        budget: {
          ok: false,
          detail: "The budget's state cannot be read: connect ECONNREFUSED 127.0.0.1:5432",
        },
      },
    });
  });
});
