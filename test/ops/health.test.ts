import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkReadiness, databaseProbe, type ReadinessProbes } from '../../src/ops/index.ts';
import { type DatabaseConfig, openDatabase } from '../../src/storage/index.ts';
import { activeBudget } from '../support/budget-status.ts';
import { type SilentServer, startSilentServer } from '../support/net.ts';

const probes = (overrides: Partial<ReadinessProbes> = {}): ReadinessProbes => ({
  gatewayConnected: () => true,
  database: () => {},
  tts: async () => [],
  budget: () => activeBudget({ warnUsd: undefined }),
  ...overrides,
});

let silent: SilentServer | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  // The listener first: the pool's connections end with it, and only then can the pool close.
  await silent?.close();
  silent = undefined;
  for (const cleanup of cleanups.splice(0)) await cleanup();
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

  it('fails the database and budget checks within their bound when PostgreSQL accepts connections and never answers', async () => {
    // A host that drops packets: TCP connects (here, to a listener that never speaks), the protocol never starts.
    silent = await startSilentServer();
    const config: DatabaseConfig = {
      kind: 'postgres',
      url: `postgres://herald:pg-Silent-secret-77@127.0.0.1:${silent.port}/herald`,
      poolSize: 2,
    };
    const db = openDatabase(config);
    cleanups.push(() => db.close());
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let answered = false;
    const readiness = checkReadiness(
      probes({
        database: databaseProbe(db, config),
        // The budget's state, read from the same database.
        budget: async () => {
          await db.get('SELECT 1');
          return probes().budget();
        },
      }),
      { databaseTimeoutMs: 2_000 },
    ).finally(() => {
      answered = true;
    });
    await silent.accepted(2);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(answered).toBe(true);
    expect(await readiness).toEqual({
      ready: false,
      checks: {
        gateway: { ok: true },
        database: { ok: false, detail: 'The database did not answer within 2000 ms.' },
        tts: { ok: true },
        budget: {
          ok: false,
          detail: "The budget's state cannot be read: the database did not answer within 2000 ms",
        },
      },
    });
  });

  it('runs the checks at once: a silent database and a silent TTS service answer within the longest bound', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const never = () => new Promise<never>(() => {});
    let answered = false;
    const readiness = checkReadiness(
      probes({
        database: never,
        budget: never,
        tts: () => new Promise((_, reject) => setTimeout(() => reject(new Error('aborted')), 3_000)),
      }),
      { databaseTimeoutMs: 3_000, ttsTimeoutMs: 3_000 },
    ).finally(() => {
      answered = true;
    });
    await vi.advanceTimersByTimeAsync(2_999);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(answered).toBe(true);
    expect(await readiness).toMatchObject({
      ready: false,
      checks: {
        database: { ok: false, detail: 'The database did not answer within 3000 ms.' },
        tts: { ok: false },
        budget: { ok: false },
      },
    });
  });
});
