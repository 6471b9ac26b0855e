import { afterEach, describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/budget/index.ts';
import { silentLogger } from '../../src/log.ts';
import {
  createOpsMetrics,
  databaseProbe,
  keepRecentProblems,
  type OpsServer,
  type OpsState,
  renderStatusPage,
  type SessionView,
  sameSecret,
  spendBuckets,
  startOpsServer,
  statusOf,
} from '../../src/ops/index.ts';
import { type Database, type DatabaseConfig, openDatabase } from '../../src/storage/index.ts';
import { activeBudget } from '../support/budget-status.ts';
import { type SilentServer, startSilentServer } from '../support/net.ts';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 23, 18, 30);
const SECRET_KEY = 'ttsprov_live_supersecretkey0123';

const active = activeBudget({ balanceSeenAt: NOW - 1000 });

const entry = (at: number, characters: number, costUsd: number | null): LedgerEntry => ({
  id: at,
  kind: 'speech',
  guildId: '1',
  userId: '2',
  characters,
  costUsd,
  estimatedCostUsd: 0.5,
  balanceAfterUsd: null,
  requestId: null,
  at,
  wasted: null,
  uncertain: false,
  day: new Date(at).toISOString().slice(0, 10),
});

function state(overrides: Partial<OpsState> = {}): OpsState {
  return {
    budget: () => active,
    sessions: () => [],
    gatewayConnected: () => true,
    ledger: () => [],
    recentProblems: () => [],
    cache: () => ({ entries: 0, bytes: 0 }),
    ...overrides,
  };
}

const lounge: SessionView = {
  guildId: '1',
  guildName: 'Server 1',
  channelName: 'Lounge',
  queueDepth: 2,
  connection: 'ready',
  player: 'playing',
};

/** What every endpoint here shares: a free loopback port, no token, no log. */
const LOOPBACK = { port: 0, host: '127.0.0.1', token: undefined, logger: silentLogger } as const;

let server: OpsServer | undefined;
let silent: SilentServer | undefined;
let db: Database | undefined;
afterEach(async () => {
  await server?.close();
  // The listener before the pool: the pool's connections end with it, and only then can the pool close.
  await silent?.close();
  await db?.close();
  server = undefined;
  silent = undefined;
  db = undefined;
});

async function start(token: string | undefined, s: OpsState = state()): Promise<OpsServer> {
  server = await startOpsServer({
    ...LOOPBACK,
    token,
    registry: createOpsMetrics(s).registry,
    status: statusOf(s),
    probes: {
      gatewayConnected: () => true,
      database: () => {},
      tts: async () => [],
      budget: () => active,
    },
    secrets: [SECRET_KEY, ...(token ? [token] : [])],
    now: () => NOW,
  });
  return server;
}

describe('spendBuckets', () => {
  it('puts each ledger row in its UTC hour, counting the estimate when the cost is unknown', () => {
    const buckets = spendBuckets(
      [entry(NOW - 30 * HOUR, 5, 1), entry(NOW - HOUR, 10, 0.25), entry(NOW, 20, 0.5), entry(NOW, 7, null)],
      NOW,
      HOUR,
      24,
    );
    expect(buckets).toHaveLength(24);
    expect(buckets[23]).toMatchObject({
      start: Date.UTC(2026, 10, 23, 18),
      usd: 1,
      characters: 27,
      generations: 2,
    });
    expect(buckets[22]).toMatchObject({ usd: 0.25, generations: 1 });
    expect(buckets.reduce((sum, b) => sum + b.generations, 0)).toBe(3);
  });
});

describe('renderStatusPage', () => {
  it('shows the balance, the floor, a stop with how to resume, and escapes what servers named', () => {
    const html = renderStatusPage({
      now: NOW,
      stored: {
        status: 'read',
        budget: { ...active, status: 'blocked', since: NOW - HOUR, reason: 'service-refused' },
        ledger: [entry(NOW, 20, 0.5)],
      },
      sessions: [
        {
          guildId: '1',
          guildName: '<script>x</script>',
          channelName: 'Lounge',
          queueDepth: 2,
          connection: 'ready',
          player: 'playing',
        },
      ],
      problems: [{ at: NOW, level: 'error', message: 'tts failed', detail: 'TtsServiceError: <b>500</b>' }],
      gatewayConnected: false,
    });
    expect(html).toContain('id="balance" data-usd="9.5">$9.50<');
    expect(html).toContain('data-state="blocked" data-reason="service-refused"');
    expect(html).toMatch(/\/budget recheck/);
    expect(html).toContain('for lack of credit.</p>');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&#60;script&#62;');
    expect(html).toContain('&#60;b&#62;500');
    expect(html).toContain('not connected');
  });

  it("shows each shard (the manager's page): its gateway and sessions, or that it did not answer", () => {
    const html = renderStatusPage({
      now: NOW,
      stored: { status: 'read', budget: active, ledger: [] },
      sessions: [
        {
          guildId: '1',
          guildName: 'Server 1',
          channelName: 'Room',
          queueDepth: 0,
          connection: 'ready',
          player: 'idle',
          shard: 0,
        },
      ],
      problems: [
        { at: NOW, level: 'warn', message: 'shard process died', detail: undefined, shard: 'manager' },
      ],
      gatewayConnected: false,
      shards: [
        { id: 0, status: 'answered', gatewayConnected: true, sessions: 1 },
        { id: 1, status: 'silent', detail: 'shard 1 did not answer within 5000 ms <x>' },
        {
          id: 2,
          status: 'standing-by',
          detail: 'Standing by: another Herald runs these shards (shard 2 of 3 on b).',
        },
      ],
    });
    expect(html).toContain('1 of 3 shards connected');
    expect(html).toContain(
      '<tr data-shard="2" data-state="standing-by"><td>2</td><td colspan="2">Standing by: another Herald runs these shards (shard 2 of 3 on b).</td></tr>',
    );
    expect(html).toMatch(/<tr data-shard="0" data-state="answered" data-gateway="connected">/);
    expect(html).toMatch(
      /<tr data-shard="1" data-state="silent">.*no answer: shard 1 did not answer within 5000 ms &#60;x&#62;/,
    );
    expect(html).toMatch(/<tr data-shard="0"><td>Server 1<\/td>/);
    expect(html).toMatch(/manager<\/span> <strong>warn<\/strong> shard process died/);
  });

  it('says the database does not answer where the budget and the spend would be, and shows what is live', () => {
    const html = renderStatusPage({
      now: NOW,
      stored: {
        status: 'unreadable',
        detail: 'The database does not answer: connect ECONNREFUSED 127.0.0.1:5432',
      },
      sessions: [lounge],
      problems: [{ at: NOW, level: 'error', message: 'could not reserve', detail: undefined }],
      gatewayConnected: true,
    });
    expect(html).toMatch(
      /<p id="database" data-state="unreadable" class="bad">The database does not answer: connect ECONNREFUSED 127\.0\.0\.1:5432<\/p>\n<p class="muted">The balance/,
    );
    expect(html).not.toContain('id="balance"');
    expect(html).not.toContain('id="spend-hourly"');
    expect(html).toContain('gateway <span class="ok">connected</span>');
    expect(html).toMatch(/<td>Server 1<\/td><td>Lounge<\/td><td class="queue">2<\/td>/);
    expect(html).toMatch(/<strong>error<\/strong> could not reserve/);
  });

  it('shows no shards section for one process', () => {
    const html = renderStatusPage({
      now: NOW,
      stored: { status: 'read', budget: active, ledger: [] },
      sessions: [],
      problems: [],
      gatewayConnected: true,
    });
    expect(html).not.toContain('id="shards"');
    expect(html).toContain('gateway <span class="ok">connected</span>');
  });
});

describe('startOpsServer', () => {
  it('serves everything without a token when none is set', async () => {
    const { url } = await start(undefined);
    for (const path of ['/', '/metrics', '/healthz', '/readyz'])
      expect((await fetch(`${url}${path}`)).status).toBe(200);
  });

  it('asks for the token on / and /metrics only; accepts a bearer token or the login cookie', async () => {
    const token = 'a-long-operator-token-123456';
    const { url } = await start(token);
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(401);
    expect(await page.text()).toContain('<form method="post" action="/login">');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
      200,
    );
    expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}x` } })).status).toBe(
      401,
    );

    const wrong = await fetch(`${url}/login`, {
      method: 'POST',
      body: new URLSearchParams({ token: 'nope' }),
      redirect: 'manual',
    });
    expect(wrong.status).toBe(401);
    const login = await fetch(`${url}/login`, {
      method: 'POST',
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
    expect(login.status).toBe(303);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(cookie).toMatch(/^herald_status=[0-9a-f]{64}$/);
    expect(cookie).not.toContain(token);
    expect((await fetch(`${url}/`, { headers: { cookie } })).status).toBe(200);
    expect((await fetch(`${url}/`, { headers: { cookie: `${cookie.slice(0, -1)}0` } })).status).toBe(401);
  });

  it('serves the status page from a source that gathers it asynchronously (the sharding manager)', async () => {
    server = await startOpsServer({
      ...LOOPBACK,
      registry: createOpsMetrics(state()).registry,
      status: {
        budget: async () => active,
        ledger: async () => [entry(NOW, 20, 0.5)],
        live: async () => ({
          sessions: [],
          problems: [],
          gatewayConnected: false,
          shards: [{ id: 0, status: 'silent', detail: `no answer ${SECRET_KEY}` }],
        }),
      },
      readiness: async () => ({ ready: false }),
      secrets: [SECRET_KEY],
      now: () => NOW,
    });
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('0 of 1 shards connected');
    expect(html).toContain('data-state="silent"');
    expect(html).toContain('data-total-usd="0.5"');
    expect(html).not.toContain(SECRET_KEY);
  });

  it('answers /readyz 503 with the failing check, and scrubs secrets from every answer', async () => {
    server = await startOpsServer({
      ...LOOPBACK,
      registry: createOpsMetrics(state()).registry,
      status: statusOf(
        state({
          recentProblems: () => [{ at: NOW, level: 'warn', message: `key ${SECRET_KEY}`, detail: undefined }],
        }),
      ),
      probes: {
        gatewayConnected: () => true,
        database: () => {
          throw new Error(`locked by ${SECRET_KEY}`);
        },
        tts: async () => [],
        budget: () => active,
      },
      secrets: [SECRET_KEY],
    });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    const body = await ready.text();
    expect(JSON.parse(body)).toMatchObject({ ready: false, checks: { database: { ok: false } } });
    expect(body).not.toContain(SECRET_KEY);
    expect(await (await fetch(`${server.url}/`)).text()).not.toContain(SECRET_KEY);
  });
});

describe('startOpsServer while the database fails', () => {
  const PASSWORD = 'pg-Status-secret-4411';

  it('serves the status page (200), saying the database does not answer, with what is live and no secret', async () => {
    // A driver message quoting the password is contrived; it shows that whatever the driver says is scrubbed.
    const refused = () => Promise.reject(new Error(`connect ECONNREFUSED 127.0.0.1:5432 (${PASSWORD})`));
    const s = state({
      budget: refused,
      ledger: refused,
      sessions: () => [lounge],
      recentProblems: () => [{ at: NOW, level: 'error', message: 'could not reserve', detail: undefined }],
    });
    server = await startOpsServer({
      ...LOOPBACK,
      registry: createOpsMetrics(s).registry,
      status: statusOf(s),
      probes: { gatewayConnected: () => true, database: refused, tts: async () => [], budget: refused },
      secrets: [SECRET_KEY, PASSWORD],
      now: () => NOW,
    });
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toMatch(
      /id="database" data-state="unreadable" class="bad">The database does not answer: connect ECONNREFUSED 127\.0\.0\.1:5432 \(\[redacted\]\)/,
    );
    expect(html).toContain('<td>Lounge</td>');
    expect(html).toContain('could not reserve');
    expect(html).not.toContain(PASSWORD);
  });

  it("serves the sharding manager's page (200): the database's failure said, every shard still listed", async () => {
    server = await startOpsServer({
      ...LOOPBACK,
      registry: createOpsMetrics(state()).registry,
      status: {
        budget: () => Promise.reject(new Error('Connection terminated unexpectedly')),
        ledger: () => Promise.reject(new Error('Connection terminated unexpectedly')),
        live: async () => ({
          sessions: [{ ...lounge, shard: 1 }],
          problems: [],
          gatewayConnected: false,
          shards: [
            { id: 0, status: 'silent', detail: 'shard 0 did not answer within 5000 ms' },
            { id: 1, status: 'answered', gatewayConnected: true, sessions: 1 },
          ],
        }),
      },
      readiness: async () => ({ ready: false }),
      secrets: [SECRET_KEY],
      now: () => NOW,
    });
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(
      'id="database" data-state="unreadable" class="bad">The database does not answer: Connection terminated unexpectedly',
    );
    expect(html).toContain('1 of 2 shards connected');
    expect(html).toContain('<tr data-shard="0" data-state="silent">');
    expect(html).toMatch(/<tr data-shard="1"><td>Server 1<\/td>/);
  });

  it('answers /readyz (503), /metrics and / (200) within the bound when PostgreSQL accepts connections and never answers', async () => {
    // A host that drops packets: TCP connects (to a listener that holds the socket), PostgreSQL never speaks.
    silent = await startSilentServer();
    const config: DatabaseConfig = {
      kind: 'postgres',
      url: `postgres://herald:${PASSWORD}@127.0.0.1:${silent.port}/herald`,
      poolSize: 2,
    };
    const open = openDatabase(config);
    db = open;
    const s = state({
      budget: async () => {
        await open.get('SELECT 1');
        return active;
      },
      ledger: () => open.all('SELECT 1'),
    });
    const databaseTimeoutMs = 300;
    server = await startOpsServer({
      ...LOOPBACK,
      registry: createOpsMetrics(s, { databaseTimeoutMs }).registry,
      status: statusOf(s),
      probes: {
        gatewayConnected: () => true,
        database: databaseProbe(open, config),
        tts: async () => [],
        budget: s.budget,
      },
      databaseTimeoutMs,
      secrets: [SECRET_KEY, PASSWORD],
      now: () => NOW,
    });
    const url = server.url;
    const [ready, metrics, page] = await Promise.all(
      ['/readyz', '/metrics', '/'].map(async (path) => {
        const response = await fetch(`${url}${path}`);
        return { status: response.status, text: await response.text() };
      }),
    );
    expect(ready?.status).toBe(503);
    expect(JSON.parse(ready?.text ?? '')).toMatchObject({
      ready: false,
      checks: {
        database: { ok: false, detail: 'The database did not answer within 300 ms.' },
        budget: {
          ok: false,
          detail: "The budget's state cannot be read: the database did not answer within 300 ms",
        },
      },
    });
    expect(metrics?.status).toBe(200);
    expect(metrics?.text).toMatch(/^herald_budget_state_readable 0$/m);
    expect(metrics?.text).toMatch(/^herald_voice_sessions 0$/m);
    expect(page?.status).toBe(200);
    expect(page?.text).toContain(
      'data-state="unreadable" class="bad">The database did not answer within 300 ms.</p>',
    );
    for (const answer of [ready, metrics, page]) expect(answer?.text).not.toContain(PASSWORD);
  });
});

describe('sameSecret', () => {
  it.each([
    ['abc', 'abc', true],
    ['abc', 'abd', false],
    ['abc', 'abcd', false],
    ['', 'abc', false],
  ])('%s vs %s → %s', (a, b, same) => expect(sameSecret(a, b)).toBe(same));
});

describe('keepRecentProblems', () => {
  it('keeps the latest warnings and errors, newest first, scrubbed, and still logs them', () => {
    const lines: string[] = [];
    const base = {
      ...silentLogger,
      warn: (m: string) => lines.push(m),
      error: (m: string) => lines.push(m),
      child: () => base,
    };
    const kept = keepRecentProblems(base, { secrets: [SECRET_KEY], limit: 2, now: () => NOW });
    kept.logger.info('not kept');
    kept.logger.warn('first');
    kept.logger
      .child({ guild: '1' })
      .error(`second ${SECRET_KEY}`, { err: new TypeError(`bad ${SECRET_KEY}`) });
    kept.logger.warn('third');
    expect(kept.recent().map((p) => p.message)).toEqual(['third', 'second [redacted]']);
    expect(kept.recent()[1]?.detail).toBe('TypeError: bad [redacted]');
    expect(lines).toHaveLength(3);
  });
});
