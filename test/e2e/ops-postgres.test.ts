import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type PostgresServer, startPostgres } from '../support/postgres.ts';
import { until } from '../support/until.ts';
import { createWorld, type World } from './harness.ts';

// The operations endpoint through a PostgreSQL outage: Herald on both emulators and a PostgreSQL cluster of this
// file's own (the run's shared cluster serves other files, so it is never stopped), which the test stops and starts
// again.

const cluster = inject('postgres');
const PASSWORD = 'pg-Outage-5e8d1c7a93';

type Server = Extract<PostgresServer, { kind: 'running' }>;
let server: Server;
let world: World;

/** `/readyz` as an orchestrator reads it. */
async function readiness(): Promise<{
  status: number;
  text: string;
  body: { ready: boolean; checks: Record<string, { ok: boolean; detail?: string }> };
}> {
  const ops = world.herald().ops;
  if (!ops) throw new Error('the ops endpoint is not running');
  const response = await fetch(`${ops.url}/readyz`);
  const text = await response.text();
  return { status: response.status, text, body: JSON.parse(text) };
}

/** `GET path` on the operations endpoint (no METRICS_TOKEN here). */
async function get(path: string): Promise<{ status: number; text: string }> {
  const ops = world.herald().ops;
  if (!ops) throw new Error('the ops endpoint is not running');
  const response = await fetch(`${ops.url}${path}`);
  return { status: response.status, text: await response.text() };
}

const describePg = 'url' in cluster ? describe : describe.skip;
if ('skipped' in cluster) {
  describe.skip(`the operations endpoint on PostgreSQL — skipped: ${cluster.skipped}`, () => {
    it('is not ready while PostgreSQL is down', () => {});
  });
}

beforeAll(async () => {
  if (!('url' in cluster)) return;
  const started = await startPostgres();
  if (started.kind !== 'running') throw new Error(started.reason);
  server = started;
  // A role with a password, as a deployment's DATABASE_URL has (the cluster trusts loopback, so it is never
  // checked: it is there to be kept out of every answer).
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE herald LOGIN PASSWORD '${PASSWORD}'`);
    await admin.query('CREATE DATABASE herald OWNER herald');
  } finally {
    await admin.end();
  }
  const url = new URL(server.url);
  url.username = 'herald';
  url.password = PASSWORD;
  url.pathname = '/herald';
  world = await createWorld({
    env: { METRICS_PORT: '0', DATABASE_URL: url.toString(), DATABASE_POOL_SIZE: '2' },
    ttsReadyTimeoutMs: 1_000,
  });
});
afterAll(async () => {
  await world?.close();
  await server?.stop();
});

describePg('the operations endpoint on PostgreSQL', () => {
  it('is not ready while PostgreSQL is down but still scraped and paged, never shows its password, and is ready again when it is back', async () => {
    const before = await readiness();
    expect(before.status).toBe(200);
    expect(before.body.checks.database).toEqual({ ok: true });

    await server.halt();
    const down = await readiness();
    expect(down.status).toBe(503);
    expect(down.body.ready).toBe(false);
    expect(down.body.checks.database).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^The database does not answer: \S/),
    });
    // The budget's state lives in the database too; Discord and the TTS service are still fine.
    expect(down.body.checks.budget).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^The budget's state cannot be read: \S/),
    });
    expect(down.body.checks.gateway).toEqual({ ok: true });
    expect(down.body.checks.tts).toEqual({ ok: true });
    expect(down.text).not.toContain(PASSWORD);
    // A member is told what is wrong in a sentence, not handed an error id.
    const refused = await world.discord.slash(world.member, 'speak', { text: 'Anyone there?' });
    expect(refused.content).toBe(
      'Herald’s database is not answering right now, so this did not go through. Try again in a moment.',
    );

    // Prometheus keeps scraping: everything that needs no database, and a gauge saying the budget's was not read.
    const scrape = await get('/metrics');
    expect(scrape.status).toBe(200);
    expect(scrape.text).toMatch(/^herald_budget_state_readable 0$/m);
    expect(scrape.text).toMatch(/^herald_gateway_connected 1$/m);
    expect(scrape.text).toMatch(/^herald_voice_sessions 0$/m);
    expect(scrape.text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(scrape.text).not.toMatch(/^herald_budget_floor_usd /m);
    expect(scrape.text).not.toContain(PASSWORD);
    // The status page says the database does not answer, and still shows what is live.
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/id="database" data-state="unreadable"[^>]*>The database does not answer/);
    expect(page.text).toContain('gateway <span class="ok">connected</span>');
    expect(page.text).toContain('id="sessions"');
    expect(page.text).toContain('id="problems"');
    expect(page.text).not.toContain(PASSWORD);

    await server.resume();
    // The same process, on fresh connections: no restart.
    const back = await until('ready again', async () => {
      const r = await readiness();
      return r.status === 200 ? r : undefined;
    });
    expect(back.body.checks.database).toEqual({ ok: true });
    const scrapeBack = await get('/metrics');
    expect(scrapeBack.text).toMatch(/^herald_budget_state_readable 1$/m);
    expect(scrapeBack.text).toMatch(/^herald_budget_floor_usd \d/m);
    const pageBack = await get('/');
    expect(pageBack.text).not.toContain('id="database"');
    expect(pageBack.text).toContain('id="balance"');
    // And it speaks again, its reservation and ledger row written to the database that came back.
    const reply = await world.discord.slash(world.member, 'speak', { text: 'Back on the database.' });
    expect(reply.content).toMatch(/Speaking now/);
    await world.discord.voice(world.guild).untilSilent({ quietMs: 500 });
    const rows = await until('the ledger row', async () => {
      const client = new pg.Client({ connectionString: server.url.replace(/\/postgres$/, '/herald') });
      await client.connect();
      try {
        const { rows } = await client.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM budget_ledger WHERE cost_nanos IS NOT NULL',
        );
        return rows[0]?.n ? rows[0].n : undefined;
      } finally {
        await client.end();
      }
    });
    expect(rows).toBe(1);
    expect(world.logs.join('\n')).not.toContain(PASSWORD);
  });

  it('plays audio the service charged while PostgreSQL was down, and writes its ledger row once it is back', async () => {
    const capture = world.discord.voice(world.guild);
    capture.clear();
    const before = world.tts.requests.length;
    // The charge is made, then the answer waits 1.5 s: PostgreSQL goes down in between, so the settlement (the
    // ledger row, the balance the answer carries) cannot be written when the audio arrives.
    world.tts.configure({ chargedLatencyMs: 1_500 });
    try {
      const reply = await world.discord.slash(world.member, 'speak', {
        text: 'Paid while the database was away.',
      });
      expect(reply.content).toMatch(/Speaking now/);
      const charged = await until('the charge', async () =>
        world.tts.requests.slice(before).find((request) => request.chargedUsd > 0),
      );
      await server.halt();
      // Heard while the database is still down: the money is spent, playing it costs nothing more.
      await capture.untilFrames(25);
      expect(reply.followUps()).toEqual([]);
      await server.resume();
      const row = await until('the ledger row', async () => {
        const rows = await herald(
          'SELECT cost_nanos::bigint AS cost, uncertain FROM budget_ledger WHERE request_id = $1',
          [charged.requestId],
        );
        return rows[0];
      });
      expect(Number(row.cost)).toBe(Math.round(charged.chargedUsd * 1e9));
      expect(Number(row.uncertain)).toBe(0);
      expect(await herald('SELECT id FROM budget_reservations')).toEqual([]);
    } finally {
      world.tts.configure({ chargedLatencyMs: 0 });
      await server.resume();
    }
  });
});

/** A query on Herald's database, as its owner. */
async function herald(sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: server.url.replace(/\/postgres$/, '/herald') });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}
