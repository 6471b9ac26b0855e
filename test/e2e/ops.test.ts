import { readdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Heard, silenceInsideWords } from '../../emulators/discord/index.ts';
import { DEFAULT_SPEAKERS, startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { until } from '../support/until.ts';
import { createWorld, type World } from './harness.ts';

// The operations endpoint end to end: Herald on both emulators with METRICS_PORT set; /metrics scraped while it
// speaks, /readyz while its dependencies fail and come back.

const [bella, adam, nova] = DEFAULT_SPEAKERS as [
  (typeof DEFAULT_SPEAKERS)[0],
  (typeof DEFAULT_SPEAKERS)[0],
  (typeof DEFAULT_SPEAKERS)[0],
];
const FLOOR_USD = 1;

let world: World;
/** The TTS emulator after the "unreachable" test replaced the world's one. */
let replacement: TtsEmulator | undefined;
const tts = (): TtsEmulator => replacement ?? world.tts;

beforeAll(async () => {
  world = await createWorld({
    env: {
      METRICS_PORT: '0',
      BUDGET_FLOOR_USD: String(FLOOR_USD),
      QUEUE_MAX_PER_MEMBER: '3',
      // The harness turns the cache off; here its families are checked against its ledger and folder.
      AUDIO_CACHE_MB: '256',
    },
    ttsReadyTimeoutMs: 1_000,
  });
  await world.discord.slash(
    world.admin,
    'autoread',
    { channel: world.text, enabled: true },
    { subcommand: 'channel' },
  );
});
afterAll(async () => {
  await world?.close();
  await replacement?.close();
});

const opsUrl = (): string => {
  const ops = world.herald().ops;
  if (!ops) throw new Error('the ops endpoint is not running');
  return ops.url;
};
const get = async (path: string): Promise<{ status: number; text: string; type: string }> => {
  const response = await fetch(`${opsUrl()}${path}`);
  return {
    status: response.status,
    text: await response.text(),
    type: response.headers.get('content-type') ?? '',
  };
};
const scrape = async (): Promise<string> => (await get('/metrics')).text;
const readiness = async (): Promise<{
  status: number;
  body: {
    ready: boolean;
    checks: Record<string, { ok: boolean; detail?: string; reason?: string; resume?: string }>;
  };
}> => {
  const { status, text } = await get('/readyz');
  return { status, body: JSON.parse(text) };
};

/** The value of one sample, e.g. `value(text, 'herald_utterances_total', { source: 'speak', outcome: 'spoken' })`. */
function value(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((pair) => [pair[1], pair[2]]),
    );
    if (
      Object.entries(labels).every(([key, v]) => found[key] === v) &&
      Object.keys(found).length === Object.keys(labels).length
    )
      return Number(match[3]);
  }
  throw new Error(`no sample ${name}${JSON.stringify(labels)} in the scrape`);
}

/** Runs of segments with the same pitch (within 6 %). */
function utterancesHeard(heard: Heard): number {
  let runs = 0;
  let previous: number | undefined;
  for (const segment of heard.segments) {
    const hz = segment.dominantHz;
    if (previous === undefined || Math.abs(hz - previous) > previous * 0.06) runs += 1;
    previous = hz;
  }
  return runs;
}

const databasePath = (): string => (world.env.DATABASE_URL ?? '').replace(/^sqlite:/, '');
/** Characters, dollars and rows of a ledger table, read from the database file itself. */
const totals = (table: string, nanos: string): { characters: number; usd: number; rows: number } => {
  const db = new DatabaseSync(databasePath(), { readOnly: true });
  try {
    return db
      .prepare(
        `SELECT COALESCE(SUM(characters), 0) AS characters, COALESCE(SUM(${nanos}), 0) / 1e9 AS usd, COUNT(*) AS rows FROM ${table}`,
      )
      .get() as { characters: number; usd: number; rows: number };
  } finally {
    db.close();
  }
};
const ledgerTotals = () => totals('budget_ledger', 'cost_nanos');
const cacheLedgerTotals = () => totals('audio_cache_ledger', 'saved_nanos');
/** The audio cache's entry files, as the operator's disk sees them. */
const cacheFiles = (): { entries: number; bytes: number } => {
  const dir = join(dirname(databasePath()), 'audio-cache');
  const files = readdirSync(dir).filter((name) => name.endsWith('.hac'));
  return {
    entries: files.length,
    bytes: files.reduce((sum, name) => sum + statSync(join(dir, name)).size, 0),
  };
};

describe('the operations endpoint', () => {
  it('answers /healthz, and /readyz is ready once Herald is logged in', async () => {
    const health = await get('/healthz');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toMatchObject({ status: 'ok' });
    const ready = await readiness();
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      ready: true,
      checks: { gateway: { ok: true }, database: { ok: true }, tts: { ok: true }, budget: { ok: true } },
    });
  });

  it('exposes every family with the figures of an end-to-end run', async () => {
    const texts = ['First of three, metrics please.', 'Second one.', 'And the third utterance.'];
    for (const [i, speaker] of [bella, adam, nova].entries()) {
      await world.discord.slash(world.member, 'speak', { text: texts[i] ?? '', speaker: speaker.name });
    }
    const spoken = await world.discord.voice(world.guild).untilSilent({ quietMs: 800 });
    // The first sentence again, in the same voice: the audio cache plays it without paying.
    await world.discord.slash(world.member, 'speak', { text: texts[0] ?? '', speaker: bella.name });
    const again = await world.discord.voice(world.guild).untilSilent({ quietMs: 800 });
    world.discord.sendMessage(world.member, world.text, 'Read this aloud please');
    const read = await world.discord.voice(world.guild).untilSilent({ quietMs: 800 });
    // Each utterance has its own voice, so the utterances heard are the runs of one pitch (a scheduling stall on
    // a loaded machine may split one utterance's sound in two, never change its pitch).
    expect(utterancesHeard(spoken)).toBe(3);
    expect(utterancesHeard(again)).toBe(1);
    expect(utterancesHeard(read)).toBe(1);

    // Each paid utterance's file is written once its audio has ended; the scrape is taken when all four are.
    const text = await until('the audio cache files', async () => {
      const scraped = await scrape();
      return value(scraped, 'herald_audio_cache_entries') === 4 ? scraped : undefined;
    });
    // Utterances by source and outcome; one first-packet sample per utterance heard.
    expect(value(text, 'herald_utterances_queued_total', { source: 'speak' })).toBe(4);
    expect(value(text, 'herald_utterances_queued_total', { source: 'autoread' })).toBe(1);
    expect(value(text, 'herald_utterances_total', { source: 'speak', outcome: 'spoken' })).toBe(4);
    expect(value(text, 'herald_utterances_total', { source: 'autoread', outcome: 'spoken' })).toBe(1);
    expect(value(text, 'herald_utterances_total', { source: 'speak', outcome: 'failed' })).toBe(0);
    expect(value(text, 'herald_first_packet_seconds_count', { source: 'speak' })).toBe(
      utterancesHeard(spoken) + utterancesHeard(again),
    );
    expect(value(text, 'herald_first_packet_seconds_count', { source: 'autoread' })).toBe(
      utterancesHeard(read),
    );
    const firstPacketSum = value(text, 'herald_first_packet_seconds_sum', { source: 'speak' });
    expect(firstPacketSum).toBeGreaterThan(0);
    expect(firstPacketSum).toBeLessThan(60);
    expect(value(text, 'herald_first_packet_seconds_bucket', { source: 'speak', le: '+Inf' })).toBe(4);
    // The admin's /autoread and four /speak, each answered once and in time (a reply, or a deferral then an edit).
    expect(value(text, 'herald_interaction_answers_total', { outcome: 'accepted' })).toBe(5);
    expect(value(text, 'herald_interaction_answers_total', { outcome: 'expired' })).toBe(0);
    expect(value(text, 'herald_interaction_answer_seconds_count')).toBe(5);
    expect(value(text, 'herald_interaction_answer_seconds_bucket', { le: '3' })).toBe(5);
    // Every generation's headers were timed.
    const generations = tts().requests.filter((r) => r.path.endsWith('/speech/generate') && r.status === 200);
    expect(value(text, 'herald_tts_first_byte_seconds_count')).toBe(generations.length);
    // Money: the ledger's figures exactly, and the service's balance.
    const ledger = ledgerTotals();
    expect(ledger.rows).toBe(4);
    expect(value(text, 'herald_characters_charged_total')).toBe(ledger.characters);
    expect(value(text, 'herald_dollars_charged_total')).toBeCloseTo(ledger.usd, 9);
    expect(value(text, 'herald_dollars_charged_total')).toBeCloseTo(tts().totalChargedUsd(), 9);
    expect(value(text, 'herald_balance_usd')).toBeCloseTo(tts().balanceUsd, 9);
    expect(value(text, 'herald_budget_floor_usd')).toBe(FLOOR_USD);
    expect(value(text, 'herald_budget_reservations_held')).toBe(0);
    expect(value(text, 'herald_budget_reserved_usd')).toBe(0);
    expect(value(text, 'herald_budget_stopped')).toBe(0);
    expect(value(text, 'herald_budget_stops_total', { reason: 'floor-reached' })).toBe(0);
    // The audio cache: every paid utterance was a miss, the repeated one a hit whose saving is the cache ledger's
    // (what the first one cost); its entries and bytes are the folder's.
    const saved = cacheLedgerTotals();
    const firstCost = tts().requests.find(
      (r) => (r.body as { text?: string } | undefined)?.text === texts[0],
    );
    expect(saved).toEqual({
      rows: 1,
      characters: texts[0]?.length,
      usd: expect.closeTo(firstCost?.chargedUsd ?? 0, 9),
    });
    expect(saved.usd).toBeGreaterThan(0);
    expect(value(text, 'herald_audio_cache_lookups_total', { kind: 'hit' })).toBe(1);
    expect(value(text, 'herald_audio_cache_lookups_total', { kind: 'miss' })).toBe(ledger.rows);
    expect(value(text, 'herald_audio_cache_lookups_total', { kind: 'corrupt' })).toBe(0);
    expect(value(text, 'herald_audio_cache_characters_saved_total')).toBe(saved.characters);
    expect(value(text, 'herald_audio_cache_dollars_saved_total')).toBeCloseTo(saved.usd, 9);
    expect(value(text, 'herald_audio_cache_entries')).toBe(cacheFiles().entries);
    expect(value(text, 'herald_audio_cache_bytes')).toBe(cacheFiles().bytes);
    expect(value(text, 'herald_audio_cache_evictions_total')).toBe(0);
    // Voice: one session, nothing queued, packets sent (late ones counted, whatever their number here).
    expect(value(text, 'herald_voice_sessions')).toBe(1);
    expect(value(text, 'herald_queue_depth')).toBe(0);
    expect(value(text, 'herald_queue_depth_max')).toBe(0);
    const packets = value(text, 'herald_voice_packets_total');
    // Up to three 20 ms frames a packet (VOICE_FRAMES_PER_PACKET, 3 by default); the members heard every frame.
    expect(packets).toBeGreaterThanOrEqual(
      Math.ceil((spoken.frames.length + again.frames.length + read.frames.length) / 3),
    );
    // A packet is late when it leaves a frame after the one before had played out, which a packet of 60 ms takes 60
    // ms to do: on time, it is not late (when 40 ms counted whatever the packet held, every one of them was).
    expect(value(text, 'herald_voice_late_packets_total')).toBeLessThan(packets / 2);
    expect(value(text, 'herald_voice_starved_frames_total')).toBeLessThanOrEqual(packets);
    // Errors, gateway and DAVE families exist with their bounded labels.
    expect(value(text, 'herald_tts_errors_total', { code: 'TTS_TIMEOUT' })).toBe(0);
    expect(value(text, 'herald_gateway_connected')).toBe(1);
    expect(value(text, 'herald_gateway_reconnects_total')).toBe(0);
    // The emulator speaks DAVE: joining the members' group is at least one executed transition.
    expect(value(text, 'herald_dave_transitions_total')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'herald_dave_failures_total', { kind: 'close' })).toBe(0);
    // Process metrics.
    expect(value(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    // Labels are bounded: no member text, no Discord id anywhere in the scrape.
    for (const said of [...texts, 'Read this aloud please']) expect(text).not.toContain(said);
    expect(text).not.toMatch(/\{[^}]*\d{17,20}[^}]*\}/);
    expect(text).not.toContain(world.guild.id);
    expect(text).not.toContain(world.member.id);
  });

  it('counts each frame of silence a stalling TTS service leaves inside the words, and each gap, as the members heard them', async () => {
    const capture = world.discord.voice(world.guild);
    const before = value(await scrape(), 'herald_voice_starved_frames_total');
    const gapsBefore = value(await scrape(), 'herald_voice_gaps_total');
    capture.clear();
    // The service stops for 400 ms once a few of the utterance's frames are out (after its Ogg headers and about a
    // dozen 20 ms pages), then goes on where it stopped.
    tts().inject({ kind: 'stall', afterBytes: 2_000, ms: 400 });
    await world.discord.slash(world.member, 'speak', {
      text: 'A sentence long enough to stall in the middle of its words, once the service has sent its start.',
    });
    await capture.untilSilent({ quietMs: 800 });
    // The silence frames the members received between the utterance's first and last sound, and the gaps they made.
    const { frames: inside, gaps } = silenceInsideWords(capture.frames);
    // A 400 ms stall at 4× real time: the player had at most a few frames in hand, so most of it is a gap.
    expect(inside).toBeGreaterThanOrEqual(5);
    const starved = await until('the starved frames to be counted', async () => {
      const counted = value(await scrape(), 'herald_voice_starved_frames_total') - before;
      return counted >= inside ? counted : undefined;
    });
    expect(starved).toBe(inside);
    // One stall, one gap: the audio after it, coming at four times real time, went on at once without running dry.
    expect(gaps).toBe(1);
    expect(value(await scrape(), 'herald_voice_gaps_total') - gapsBefore).toBe(gaps);
    // The operator is told why, on the status page's latest warnings (and in the log), metrics or not.
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Speech audio came slower than it plays');
  });

  it('counts an utterance held at its start because its audio came slower than real time, and only that', async () => {
    const capture = world.discord.voice(world.guild);
    const before = value(await scrape(), 'herald_voice_slow_starts_total');
    capture.clear();
    tts().inject({ kind: 'slow', speed: 0.5 });
    await world.discord.slash(world.member, 'speak', { text: 'Half real time, held to play through.' });
    await capture.untilSilent({ quietMs: 800 });
    const counted = await until('the slow start to be counted', async () => {
      const now = value(await scrape(), 'herald_voice_slow_starts_total') - before;
      return now >= 1 ? now : undefined;
    });
    expect(counted).toBe(1);
    await world.discord.slash(world.member, 'speak', { text: 'And this one at full speed.' });
    await capture.untilSilent({ quietMs: 800 });
    expect(value(await scrape(), 'herald_voice_slow_starts_total') - before).toBe(1);
  });

  it('counts errors that reach the process’s last-resort handlers, by kind', async () => {
    const before = value(await scrape(), 'herald_process_errors_total', { kind: 'unhandled-rejection' });
    expect(value(await scrape(), 'herald_process_errors_total', { kind: 'uncaught-exception' })).toBe(0);
    world.herald().processError('unhandled-rejection');
    expect(value(await scrape(), 'herald_process_errors_total', { kind: 'unhandled-rejection' })).toBe(
      before + 1,
    );
  });

  it('counts a failed utterance by its TTS error kind', async () => {
    tts().inject({ kind: 'status', status: 500 });
    await world.discord.slash(world.member, 'speak', { text: 'This one fails.' });
    await until('the failure to be counted', async () => {
      const text = await scrape();
      return value(text, 'herald_utterances_total', { source: 'speak', outcome: 'failed' }) === 1
        ? text
        : undefined;
    }).then((text) => expect(value(text, 'herald_tts_errors_total', { code: 'TTS_SERVICE' })).toBe(1));
  });

  it('counts an utterance a full queue refuses', async () => {
    const before = value(await scrape(), 'herald_utterances_total', { source: 'speak', outcome: 'refused' });
    const replies = [];
    for (const text of [
      'Queue one, a little long.',
      'Queue two.',
      'Queue three.',
      'Queue four is refused.',
    ]) {
      replies.push(await world.discord.slash(world.member, 'speak', { text }));
    }
    expect(replies.at(-1)?.content).toMatch(/already have 3 messages waiting/);
    const text = await scrape();
    expect(value(text, 'herald_utterances_total', { source: 'speak', outcome: 'refused' })).toBe(before + 1);
    await world.discord.voice(world.guild).untilSilent({ quietMs: 800 });
  });

  it('is not ready while the gateway is down, counts the reconnect, and is ready again when it is back', async () => {
    world.discord.faults.refuseGateway(true);
    const down = await until('not ready', async () => {
      const r = await readiness();
      return r.status === 503 ? r : undefined;
    });
    expect(down.body.checks.gateway).toMatchObject({ ok: false, detail: expect.stringMatching(/gateway/) });
    expect(down.body.checks.database?.ok).toBe(true);
    world.discord.faults.refuseGateway(false);
    await until('ready again', async () => ((await readiness()).status === 200 ? true : undefined));
    expect(value(await scrape(), 'herald_gateway_reconnects_total')).toBeGreaterThanOrEqual(1);
  });

  it('is not ready while the database file is gone, and ready when it is back', async () => {
    const path = databasePath();
    renameSync(path, `${path}.away`);
    try {
      const gone = await readiness();
      expect(gone.status).toBe(503);
      expect(gone.body.checks.database).toMatchObject({
        ok: false,
        detail: expect.stringMatching(/is gone/),
      });
    } finally {
      renameSync(`${path}.away`, path);
    }
    expect((await readiness()).status).toBe(200);
  });

  it('is not ready while the TTS service is unreachable, and ready when it answers again', async () => {
    const { port } = new URL(world.tts.baseUrl);
    const { apiKey } = world.tts;
    const balanceUsd = world.tts.balanceUsd;
    await world.tts.close();
    const down = await readiness();
    expect(down.status).toBe(503);
    expect(down.body.checks.tts).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/could not list its voices/),
    });
    replacement = await startTtsEmulator({ port: Number(port), apiKey, balanceUsd, speed: 8 });
    expect((await readiness()).status).toBe(200);
    // The check lists voices and never generates: nothing was charged by readiness.
    expect(replacement.requests.every((request) => request.path.endsWith('/speech/speakers'))).toBe(true);
  });

  it('counts a budget stop, and /readyz says why and how to resume', async () => {
    // Nothing queued or in flight any more, so the next charge is this test's own.
    await until('an empty queue', async () => {
      const scraped = await scrape();
      return value(scraped, 'herald_queue_depth') === 0 &&
        value(scraped, 'herald_budget_reservations_held') === 0
        ? true
        : undefined;
    });
    const charged = tts().requests.filter((r) => r.chargedUsd > 0).length;
    tts().balanceUsd = FLOOR_USD + 0.001;
    await world.discord.slash(world.member, 'speak', { text: 'This takes the balance under the floor.' });
    const text = await until('the stop to be counted', async () => {
      const scraped = await scrape();
      return value(scraped, 'herald_budget_stopped') === 1 ? scraped : undefined;
    });
    expect(value(text, 'herald_budget_stops_total', { reason: 'floor-reached' })).toBe(1);
    expect(value(text, 'herald_balance_usd')).toBeCloseTo(tts().balanceUsd, 9);
    expect(value(text, 'herald_balance_usd')).toBeLessThan(FLOOR_USD);
    expect(tts().requests.filter((r) => r.chargedUsd > 0).length).toBe(charged + 1);
    const stopped = await readiness();
    expect(stopped.status).toBe(503);
    expect(stopped.body.checks.budget).toMatchObject({
      ok: false,
      reason: 'floor-reached',
      resume: expect.stringMatching(/\/budget recheck/),
    });
  });

  it('never shows a secret on any of its pages', async () => {
    const pages = await Promise.all(
      ['/', '/metrics', '/healthz', '/readyz', '/nope'].map((path) => get(path)),
    );
    for (const page of pages) {
      expect(page.text).not.toContain(world.env.DISCORD_TOKEN);
      expect(page.text).not.toContain(world.env.TTS_API_KEY);
    }
    expect(pages[0]?.type).toMatch(/text\/html/);
    expect(pages[1]?.type).toMatch(/text\/plain/);
    expect(pages[4]?.status).toBe(404);
  });
});
