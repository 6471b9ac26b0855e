import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { analyse, decodeOpus, packetDurationMs, parseWav } from '../../../emulators/support/audio.ts';
import { demuxWithPrism, readOggOpus } from '../../../emulators/support/ogg.ts';
import {
  DEFAULT_SPEAKERS,
  expectedDurationMs,
  manySpeakers,
  startTtsEmulator,
  type TtsEmulator,
  type TtsEmulatorOptions,
} from '../../../emulators/tts/index.ts';

const open: TtsEmulator[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

async function emulator(options: TtsEmulatorOptions = {}): Promise<TtsEmulator> {
  const e = await startTtsEmulator(options);
  open.push(e);
  return e;
}

const speaker = (i: number) => {
  const s = DEFAULT_SPEAKERS[i];
  if (s === undefined) throw new Error(`no default speaker ${i}`);
  return s;
};

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** ms since the request was sent at which each body chunk arrived. */
  chunkTimes: number[];
  headersAt: number;
  /** The socket error that ended the body early, if any. */
  error?: Error;
}

interface CallOptions {
  method?: string;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
  /** The key to send: default the emulator's, null for none. */
  key?: string | null;
  /** Hang up once this many body bytes arrived, or this many ms passed without more. */
  abortAfterBytes?: number;
  abortAfterIdleMs?: number;
}

/** One HTTP request over a fresh connection, observing chunk timing and early ends. */
function call(e: TtsEmulator, path: string, o: CallOptions = {}): Promise<Reply> {
  const url = new URL(`${e.baseUrl}${path}`);
  const payload =
    o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
  const key = o.key === undefined ? e.apiKey : o.key;
  return new Promise((resolve, reject) => {
    const sentAt = Date.now();
    const req = request(url, {
      method: o.method ?? (payload === undefined ? 'GET' : 'POST'),
      agent: false,
      headers: { ...(key === null ? {} : { 'X-API-Key': key }), 'Content-Type': 'application/json' },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      const reply: Reply = {
        status: res.statusCode ?? 0,
        headers: Object.fromEntries(
          Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
        ),
        body: Buffer.alloc(0),
        chunkTimes: [],
        headersAt: Date.now() - sentAt,
      };
      const chunks: Buffer[] = [];
      let idle: NodeJS.Timeout | undefined;
      const finish = (error?: Error): void => {
        clearTimeout(idle);
        reply.body = Buffer.concat(chunks);
        if (error) reply.error = error;
        resolve(reply);
      };
      const armIdle = (): void => {
        if (o.abortAfterIdleMs === undefined) return;
        clearTimeout(idle);
        idle = setTimeout(() => {
          res.destroy();
          finish(new Error('idle'));
        }, o.abortAfterIdleMs);
      };
      armIdle();
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        reply.chunkTimes.push(Date.now() - sentAt);
        armIdle();
        if (o.abortAfterBytes !== undefined && Buffer.concat(chunks).length >= o.abortAfterBytes) {
          res.destroy();
          finish(new Error('aborted by test'));
        }
      });
      res.once('end', () => finish());
      res.once('error', (error) => finish(error));
      res.once('aborted', () => finish(new Error('aborted')));
    });
    req.end(payload);
  });
}

const generate = (e: TtsEmulator, body: unknown, o: Omit<CallOptions, 'body'> = {}) =>
  call(e, '/speech/generate', { ...o, body });
const json = (reply: Reply): unknown => JSON.parse(reply.body.toString('utf8'));

describe('speakers', () => {
  it('lists the default speakers in the wire shape', async () => {
    const e = await emulator();
    const reply = await call(e, '/speech/speakers');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.headers['x-request-id']).toMatch(/^req_/);
    const list = json(reply) as Record<string, unknown>[];
    expect(list).toHaveLength(DEFAULT_SPEAKERS.length);
    expect(list[0]).toEqual({
      id: speaker(0).id,
      name: speaker(0).name,
      voice_key: speaker(0).voiceKey,
      gender: speaker(0).gender,
      language_restrictions: speaker(0).languages,
    });
  });

  it('has default speakers covering the shapes the spec allows', () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    expect(DEFAULT_SPEAKERS.length).toBeGreaterThanOrEqual(6);
    expect(DEFAULT_SPEAKERS.every((s) => uuid.test(s.id))).toBe(true);
    expect(DEFAULT_SPEAKERS.some((s) => s.gender === null)).toBe(true);
    expect(DEFAULT_SPEAKERS.some((s) => s.languages === null)).toBe(true);
    expect(DEFAULT_SPEAKERS.some((s) => JSON.stringify(s.languages) === '["en"]')).toBe(true);
    expect(DEFAULT_SPEAKERS.some((s) => s.voiceKey === s.id)).toBe(true);
    expect(DEFAULT_SPEAKERS.some((s) => /^[a-z]{2}_[a-z]+$/.test(s.voiceKey))).toBe(true);
    const tones = DEFAULT_SPEAKERS.map((s) => s.toneHz).sort((a, b) => a - b);
    for (let i = 1; i < tones.length; i++)
      expect((tones[i] ?? 0) - (tones[i - 1] ?? 0)).toBeGreaterThanOrEqual(100);
  });

  it('serves manySpeakers under a deeper base path, with distinct ids, names and tones', async () => {
    const speakers = manySpeakers(120);
    const e = await emulator({ basePath: '/gateway/tts/v1/', speakers });
    expect(e.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/gateway\/tts\/v1$/);
    const list = json(await call(e, '/speech/speakers')) as { id: string; name: string }[];
    expect(list).toHaveLength(120);
    for (const key of ['id', 'name'] as const) expect(new Set(list.map((s) => s[key])).size).toBe(120);
    expect(new Set(speakers.map((s) => s.toneHz)).size).toBe(120);
  });
});

describe('routing and authentication', () => {
  it.each([
    ['unknown path', 404, 'GET', '/speech/nope', undefined, 'not_found'],
    ['path outside the base', 404, 'GET', '/../speech/speakers', undefined, 'not_found'],
    ['GET on generate', 405, 'GET', '/speech/generate', undefined, 'method_not_allowed'],
    ['POST on speakers', 405, 'POST', '/speech/speakers', {}, 'method_not_allowed'],
  ])('%s → %i', async (_name, status, method, path, body, code) => {
    const e = await emulator();
    const reply = await call(e, path, { method, body });
    expect(reply.status).toBe(status);
    expect(json(reply)).toMatchObject({ error: { code } });
    if (status === 405) expect(reply.headers.allow).toBe(method === 'GET' ? 'POST' : 'GET');
  });

  it.each([
    ['no key', null],
    ['a wrong key', 'ttsemu_live_00000000000000000000000000000000'],
    ['an empty key', ''],
  ])('answers 401 without echoing the key for %s', async (_name, key) => {
    const e = await emulator();
    for (const path of ['/speech/speakers', '/speech/generate']) {
      const reply = await call(e, path, {
        key,
        ...(path.endsWith('generate') ? { body: { text: 'hi' } } : {}),
      });
      expect(reply.status).toBe(401);
      expect(json(reply)).toMatchObject({ error: { code: 'unauthorized' } });
      expect(reply.body.toString()).not.toContain(e.apiKey);
      if (key) expect(reply.body.toString()).not.toContain(key);
    }
    expect(e.apiKey).toMatch(/^ttsemu_live_[0-9a-f]{32}$/);
    expect(e.totalChargedUsd()).toBe(0);
  });

  it('accepts a key given in the options', async () => {
    const e = await emulator({ apiKey: 'custom_live_secret' });
    expect((await call(e, '/speech/speakers', { key: 'custom_live_secret' })).status).toBe(200);
  });
});

describe('generate validation', () => {
  const ok = { text: 'Hello', speaker_id: DEFAULT_SPEAKERS[0]?.id };
  const astral = '😀';

  it.each([
    ['malformed JSON', 400, '{"text": "hi",', 'invalid_json'],
    ['an empty body', 400, '', 'invalid_json'],
    ['a JSON array', 422, [], 'invalid_parameter'],
    ['JSON null', 422, 'null', 'invalid_parameter'],
    ['text missing', 422, { speaker_id: ok.speaker_id }, 'invalid_parameter'],
    ['text a number', 422, { ...ok, text: 5 }, 'invalid_parameter'],
    ['text empty', 422, { ...ok, text: '' }, 'invalid_parameter'],
    ['text blank', 422, { ...ok, text: ' \n\t ' }, 'invalid_parameter'],
    ['30,001 characters', 413, { ...ok, text: 'a'.repeat(30_001) }, 'text_too_long'],
    ['30,001 astral code points', 413, { ...ok, text: astral.repeat(30_001) }, 'text_too_long'],
    ['speaker_id missing', 422, { text: 'hi' }, 'invalid_parameter'],
    ['speaker_id not a UUID', 422, { ...ok, speaker_id: 'af_bella' }, 'invalid_parameter'],
    [
      'unknown speaker',
      404,
      { ...ok, speaker_id: '99999999-9999-4999-8999-999999999999' },
      'speaker_not_found',
    ],
    ['language fr', 422, { ...ok, language: 'fr' }, 'invalid_parameter'],
    ['language EN', 422, { ...ok, language: 'EN' }, 'invalid_parameter'],
    ['language null', 422, { ...ok, language: null }, 'invalid_parameter'],
    ['format wav in the current form', 422, { ...ok, format: 'wav' }, 'invalid_parameter'],
    ['format mp3', 422, { ...ok, format: 'mp3' }, 'invalid_parameter'],
    ['temperature 0.49', 422, { ...ok, temperature: 0.49 }, 'invalid_parameter'],
    ['temperature 2.01', 422, { ...ok, temperature: 2.01 }, 'invalid_parameter'],
    ['temperature "1"', 422, { ...ok, temperature: '1' }, 'invalid_parameter'],
    ['temperature null', 422, { ...ok, temperature: null }, 'invalid_parameter'],
  ])('%s → %i, nothing charged', async (_name, status, body, code) => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    const reply = await generate(e, body);
    expect(reply.status).toBe(status);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(json(reply)).toMatchObject({ error: { code, message: expect.any(String) } });
    expect(reply.headers['x-request-id']).toBe(e.requests[0]?.requestId);
    expect(e.balanceUsd).toBe(10);
    expect(e.requests[0]).toMatchObject({ status, chargedUsd: 0 });
  });

  it.each([
    [
      'language en, format opus, temperature 0.5',
      { ...ok, language: 'en', format: 'opus', temperature: 0.5 },
    ],
    ['temperature 2.0', { ...ok, temperature: 2 }],
    ['an upper-case speaker UUID', { ...ok, speaker_id: ok.speaker_id?.toUpperCase() }],
    ['unknown extra fields', { ...ok, stream: true }],
  ])('accepts %s', async (_name, body) => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    expect((await generate(e, body)).status).toBe(200);
  });

  it('accepts exactly 30,000 code points (60,000 UTF-16 units) and charges per code point', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY, msPerChar: 0.1 });
    const reply = await generate(e, { ...ok, text: astral.repeat(30_000) });
    expect(reply.status).toBe(200);
    expect(reply.headers['x-cost-usd']).toBe('3');
    expect(reply.headers['x-balance-usd']).toBe('7');
  });

  it.each([
    ['temperature (any value)', { ...ok, temperature: 1 }],
    ['format opus', { ...ok, format: 'opus' }],
  ])('variant form rejects %s with 422', async (_name, body) => {
    const e = await emulator({ form: 'variant' });
    const reply = await generate(e, body);
    expect(reply.status).toBe(422);
    expect(e.balanceUsd).toBe(10);
  });
});

describe('charging', () => {
  const speakerId = speaker(1).id;

  it('charges code points × price, rounded to 6 decimals, and reports cost and balance', async () => {
    const e = await emulator({
      speed: Number.POSITIVE_INFINITY,
      balanceUsd: 1,
      pricePerCharUsd: 0.000_012_34,
    });
    const first = await generate(e, { text: 'héllo 👋🏽', speaker_id: speakerId }); // 8 code points
    expect(first.headers['x-cost-usd']).toBe('0.000099'); // 8 × 0.00001234 = 0.00009872
    expect(first.headers['x-balance-usd']).toBe('0.999901');
    const second = await generate(e, { text: 'abc', speaker_id: speakerId });
    expect(second.headers['x-cost-usd']).toBe('0.000037');
    expect(second.headers['x-balance-usd']).toBe('0.999864');
    expect(e.balanceUsd).toBe(0.999864);
    expect(e.totalChargedUsd()).toBe(0.000136);
    expect(e.requests.map((r) => r.chargedUsd)).toEqual([0.000099, 0.000037]);
  });

  it('refuses with 402 when the cost exceeds the balance and never goes negative', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY, balanceUsd: 0.001 });
    const tooMuch = await generate(e, { text: 'x'.repeat(11), speaker_id: speakerId });
    expect(tooMuch.status).toBe(402);
    expect(json(tooMuch)).toEqual({
      error: {
        code: 'insufficient_balance',
        message: expect.stringMatching(/^Insufficient balance: /),
        balance_usd: 0.001,
      },
    });
    expect(e.balanceUsd).toBe(0.001);
    const exact = await generate(e, { text: 'x'.repeat(10), speaker_id: speakerId });
    expect(exact.status).toBe(200);
    expect(exact.headers['x-balance-usd']).toBe('0');
    const after = await generate(e, { text: 'x', speaker_id: speakerId });
    expect(after.status).toBe(402);
    expect(json(after)).toMatchObject({ error: { balance_usd: 0 } });
    expect(e.balanceUsd).toBe(0);
    e.balanceUsd = 0.5;
    const topped = await generate(e, { text: 'x', speaker_id: speakerId });
    expect(topped.status).toBe(200);
    expect(topped.headers['x-balance-usd']).toBe('0.4999');
    expect(e.totalChargedUsd()).toBe(0.0011);
  });

  it('keeps balance = start − total charged over a run of mixed requests', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY, balanceUsd: 0.01, msPerChar: 1 });
    const texts = ['a', 'bb', 'x'.repeat(40), '', 'y'.repeat(60), 'z'.repeat(25), 'q'];
    for (const text of texts) await generate(e, { text, speaker_id: speakerId });
    expect(e.requests.map((r) => r.status)).toEqual([200, 200, 200, 422, 402, 200, 200]);
    expect(e.balanceUsd).toBeGreaterThanOrEqual(0);
    expect(Math.round((e.balanceUsd + e.totalChargedUsd()) * 1e6)).toBe(10_000);
  });
});

describe('audio', () => {
  it.each([
    [20, 1],
    [40, 1],
    [60, 1],
    [20, 2],
    [40, 2],
    [60, 2],
  ] as const)(
    'Ogg Opus at %i ms, %i channel(s): prism + opus decode to the speaker tone and the stated length',
    async (frameMs, channels) => {
      const e = await emulator({ speed: Number.POSITIVE_INFINITY, audio: { frameMs, channels } });
      const text = 'The quick brown fox';
      const reply = await generate(e, { text, speaker_id: speaker(3).id });
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toBe('audio/ogg; codecs=opus');
      expect(reply.headers['x-sample-rate']).toBe('24000');
      const statedMs = Number(reply.headers['x-audio-duration']) * 1000;
      expect(statedMs).toBe(expectedDurationMs(text));
      const packets = await demuxWithPrism(reply.body);
      expect(packets.every((p) => packetDurationMs(p) === frameMs)).toBe(true);
      const read = readOggOpus(reply.body);
      expect(read.head).toEqual({ channels, preSkip: 312, inputSampleRate: 24_000 });
      expect(packets).toEqual(read.packets);
      expect(read.pages.at(-1)?.granule).toBe(BigInt(312 + statedMs * 48));
      const { segments } = analyse(decodeOpus(packets, channels));
      expect(segments).toHaveLength(1);
      expect(Math.abs((segments[0]?.durationMs ?? 0) - statedMs)).toBeLessThan(15);
      expect(segments[0]?.dominantHz).toBeCloseTo(speaker(3).toneHz, 0);
    },
  );

  it.each([
    [20, 1],
    [40, 1],
    [60, 1],
    [20, 2],
    [40, 2],
    [60, 2],
  ] as const)(
    'continued packets at %i ms, %i channel(s): readOggOpus decodes them, prism does not',
    async (frameMs, channels) => {
      const e = await emulator({
        speed: Number.POSITIVE_INFINITY,
        audio: { frameMs, channels, continuedPackets: true },
      });
      const text = 'Split across pages';
      const reply = await generate(e, { text, speaker_id: speaker(4).id });
      const read = readOggOpus(reply.body);
      const continued = read.pages.filter((p) => p.continued);
      expect(continued.length).toBeGreaterThan(0);
      for (const page of continued) expect(read.pages[page.sequence - 1]?.lacing.at(-1)).toBe(255);
      const { segments } = analyse(decodeOpus(read.packets, channels));
      expect(segments).toHaveLength(1);
      expect(Math.abs((segments[0]?.durationMs ?? 0) - expectedDurationMs(text))).toBeLessThan(15);
      expect(segments[0]?.dominantHz).toBeCloseTo(speaker(4).toneHz, 0);
      const prismPackets = await demuxWithPrism(reply.body, { chunkBytes: 1000, timeoutMs: 5000 });
      expect(prismPackets.length).toBeLessThan(read.packets.length);
    },
  );

  it.each([1, 2] as const)('variant form streams a %i-channel 24 kHz WAV of the tone', async (channels) => {
    const e = await emulator({ form: 'variant', audio: { channels }, speed: 20 });
    const text = 'Wave hello';
    const reply = await generate(e, { text, speaker_id: speaker(0).id, format: 'wav' });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('audio/wav');
    expect(reply.headers['x-audio-duration']).toBe('0.4');
    expect(reply.chunkTimes.length).toBeGreaterThan(2);
    const wav = parseWav(reply.body);
    expect(wav.sampleRate).toBe(24_000);
    expect(wav.channels).toBe(channels);
    expect(wav.samples.length).toBe(0.4 * 24_000 * channels);
    const mono = wav.samples.filter((_, i) => i % channels === 0);
    const { segments } = analyse(mono, { sampleRate: 24_000 });
    expect(segments[0]?.durationMs).toBeCloseTo(400, -1);
    expect(segments[0]?.dominantHz).toBeCloseTo(speaker(0).toneHz, 0);
  });

  it('caps audio at maxAudioMs and follows msPerChar', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY, msPerChar: 10, maxAudioMs: 500 });
    expect(
      (await generate(e, { text: 'x'.repeat(30), speaker_id: speaker(0).id })).headers['x-audio-duration'],
    ).toBe('0.3');
    expect(
      (await generate(e, { text: 'x'.repeat(90), speaker_id: speaker(0).id })).headers['x-audio-duration'],
    ).toBe('0.5');
    expect(expectedDurationMs('x'.repeat(90), { msPerChar: 10, maxAudioMs: 500 })).toBe(500);
    expect(expectedDurationMs('👋🏽!')).toBe(120);
  });

  it('writes the body in several chunks over time at the configured speed', async () => {
    const e = await emulator({ speed: 4 });
    // 25 characters → 1 s of audio; at 4× its last page is due ~240 ms after the first.
    const reply = await generate(e, { text: 'x'.repeat(25), speaker_id: speaker(2).id });
    expect(reply.chunkTimes.length).toBeGreaterThan(5);
    const spread = (reply.chunkTimes.at(-1) ?? 0) - (reply.chunkTimes[0] ?? 0);
    console.log(`body spread over ${spread} ms in ${reply.chunkTimes.length} chunks (due 240 ms)`);
    // Timers never fire early, so the spread cannot be shorter than the schedule (less a timer tick).
    expect(spread).toBeGreaterThanOrEqual(230);
  });

  it('applies configure() to later requests', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.configure({ audio: { frameMs: 60 }, pricePerCharUsd: 0.01, speakers: manySpeakers(2) });
    const reply = await generate(e, { text: 'abc', speaker_id: manySpeakers(2)[1]?.id });
    expect(reply.headers['x-cost-usd']).toBe('0.03');
    const packets = readOggOpus(reply.body).packets;
    expect(packets.every((p) => packetDurationMs(p) === 60)).toBe(true);
    expect(analyse(decodeOpus(packets)).segments[0]?.dominantHz).toBeCloseTo(210, 0);
    expect(e.speakers).toHaveLength(2);
    e.configure({ form: 'variant' });
    expect(
      (await generate(e, { text: 'abc', speaker_id: manySpeakers(2)[1]?.id })).headers['content-type'],
    ).toBe('audio/wav');
  });
});

describe('recording', () => {
  it('records every request with headers as received, parsed body, status, charge and request id', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    const before = Date.now();
    const ok = await generate(e, { text: 'Hi', speaker_id: speaker(0).id, temperature: 1.2 });
    await call(e, '/speech/speakers', { key: null });
    await generate(e, 'not json');
    expect(e.requests).toHaveLength(3);
    const [first, second, third] = e.requests;
    expect(first).toMatchObject({
      method: 'POST',
      path: '/v1/speech/generate',
      body: { text: 'Hi', speaker_id: speaker(0).id, temperature: 1.2 },
      status: 200,
      chargedUsd: 0.0002,
      requestId: ok.headers['x-request-id'],
    });
    expect(first?.headers['x-api-key']).toBe(e.apiKey);
    expect(first?.headers['content-type']).toBe('application/json');
    expect(first?.receivedAt).toBeGreaterThanOrEqual(before);
    // Every answer here was written in full: each says when.
    for (const r of e.requests) expect(r.completedAt).toBeGreaterThanOrEqual(r.receivedAt);
    expect(second).toMatchObject({
      method: 'GET',
      path: '/v1/speech/speakers',
      body: undefined,
      status: 401,
    });
    expect(second?.headers['x-api-key']).toBeUndefined();
    expect(third).toMatchObject({ body: 'not json', status: 400 });
    expect(new Set(e.requests.map((r) => r.requestId)).size).toBe(3);
  });
});

describe('faults', () => {
  const body = { text: 'x'.repeat(25), speaker_id: DEFAULT_SPEAKERS[0]?.id };

  it('delay-headers holds the response head for at least ms', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'delay-headers', ms: 300 });
    const reply = await generate(e, body);
    expect(reply.status).toBe(200);
    expect(reply.headersAt).toBeGreaterThanOrEqual(295);
    expect((await generate(e, body)).headersAt).toBeLessThan(300);
  });

  it('status answers the given status, body, content type and Retry-After, the given number of times, uncharged', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'status', status: 503, retryAfter: '2' }, { times: 2 });
    for (let i = 0; i < 2; i++) {
      const reply = await generate(e, body);
      expect(reply.status).toBe(503);
      expect(reply.headers['retry-after']).toBe('2');
      expect(json(reply)).toMatchObject({ error: { code: 'injected_fault' } });
      expect(reply.headers['x-request-id']).toMatch(/^req_/);
    }
    expect((await generate(e, body)).status).toBe(200);
    e.inject({ kind: 'status', status: 429, body: 'slow down', contentType: 'text/html' });
    const text = await generate(e, body);
    expect([text.status, text.headers['content-type'], text.body.toString()]).toEqual([
      429,
      'text/html',
      'slow down',
    ]);
    e.inject({ kind: 'status', status: 500, body: { detail: 'boom' } });
    expect(json(await generate(e, body))).toEqual({ detail: 'boom' });
    expect(e.totalChargedUsd()).toBe(0.0025);
  });

  it('faults only hit their route; "any" hits both', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'status', status: 502 }, { route: 'speakers' });
    expect((await generate(e, body)).status).toBe(200);
    expect((await call(e, '/speech/speakers')).status).toBe(502);
    expect((await call(e, '/speech/speakers')).status).toBe(200);
    e.inject({ kind: 'status', status: 500 }, { route: 'any', times: 2 });
    expect((await call(e, '/speech/speakers')).status).toBe(500);
    expect((await generate(e, body)).status).toBe(500);
    expect((await generate(e, body)).status).toBe(200);
  });

  it('stall stops the body after afterBytes for ms, then finishes it', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'stall', afterBytes: 300, ms: 400 });
    const reply = await generate(e, body);
    expect(reply.error).toBeUndefined();
    expect(readOggOpus(reply.body).packets.length).toBeGreaterThan(0);
    const gaps = reply.chunkTimes.slice(1).map((time, i) => time - (reply.chunkTimes[i] ?? time));
    const gap = Math.max(...gaps);
    // Timed on arrival: the chunk before the stall may reach the client late, shortening the gap seen (390 ms for a
    // 400 ms stall once on a loaded CI). A body at this speed has no other gap near this.
    expect(gap).toBeGreaterThanOrEqual(300);
    expect(e.requests[0]?.chargedUsd).toBe(0.0025);
  });

  it('slow streams one response at its speed, then the next at the configured one', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY, msPerChar: 10 });
    const said = { ...body, text: 'x'.repeat(20) };
    e.inject({ kind: 'slow', speed: 0.5 });
    const started = performance.now();
    const slow = await generate(e, said);
    const slowMs = performance.now() - started;
    // 200 ms of audio at half real time: the last page is due after about 400 ms.
    expect(readOggOpus(slow.body).packets.length).toBeGreaterThan(0);
    expect(slowMs).toBeGreaterThanOrEqual(350);
    const next = performance.now();
    await generate(e, said);
    expect(performance.now() - next).toBeLessThan(slowMs / 2);
  });

  it('slow with afterMs sends the start at the configured speed and slows down after it', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY, msPerChar: 10 });
    // 1 s of audio: the first 600 ms at once, the last 400 ms at half real time (about 800 ms).
    e.inject({ kind: 'slow', speed: 0.5, afterMs: 600 });
    const reply = await generate(e, { ...body, text: 'x'.repeat(100) });
    const packets = readOggOpus(reply.body).packets.length;
    expect(packets).toBeGreaterThanOrEqual(50);
    const first = reply.chunkTimes[0] ?? 0;
    const arrivedBy = (ms: number): number => reply.chunkTimes.filter((time) => time - first <= ms).length;
    // Most of the pages came with the first; the last fifth took the rest of the time.
    expect(arrivedBy(100)).toBeGreaterThan(reply.chunkTimes.length / 2);
    expect(arrivedBy(100)).toBeLessThan(reply.chunkTimes.length - 10);
    expect((reply.chunkTimes.at(-1) ?? 0) - first).toBeGreaterThanOrEqual(700);
  });

  it('stall with Infinity sends exactly afterBytes and then nothing, until the client gives up', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'stall', afterBytes: 500, ms: Number.POSITIVE_INFINITY });
    const reply = await generate(e, body, { abortAfterIdleMs: 300 });
    expect(reply.error?.message).toBe('idle');
    expect(reply.status).toBe(200);
    expect(reply.body.length).toBe(500);
    expect(reply.body.subarray(0, 4).toString()).toBe('OggS');
  });

  it('a stalled stream does not keep close() waiting', async () => {
    const e = await startTtsEmulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'stall', afterBytes: 100, ms: Number.POSITIVE_INFINITY });
    const pending = generate(e, body);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await e.close();
    const reply = await pending;
    expect(reply.body.length).toBe(100);
    expect(reply.error).toBeDefined();
  });

  it('reset destroys the socket after afterBytes of body', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'reset', afterBytes: 700 });
    const reply = await generate(e, body);
    expect(reply.status).toBe(200);
    expect(reply.error).toBeDefined();
    expect(reply.body.length).toBe(700);
    expect(e.requests[0]?.chargedUsd).toBe(0.0025);
    // The emulator still serves afterwards.
    expect((await generate(e, body)).error).toBeUndefined();
  });

  it('reset at 0 bytes ends the response right after its head', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'reset', afterBytes: 0 });
    const reply = await generate(e, body);
    expect(reply.status).toBe(200);
    expect(reply.body.length).toBe(0);
    expect(reply.error).toBeDefined();
  });

  it('content-type swaps the success content type but keeps the audio', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'content-type', contentType: 'text/html; charset=utf-8' });
    const reply = await generate(e, body);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(readOggOpus(reply.body).packets.length).toBeGreaterThan(0);
  });

  it.each([
    ['not-json', (text: string) => expect(() => JSON.parse(text)).toThrow()],
    ['wrong-shape', (text: string) => expect(Array.isArray(JSON.parse(text))).toBe(false)],
    [
      'bad-items',
      (text: string) =>
        expect((JSON.parse(text) as Record<string, unknown>[]).every((s) => !('id' in s))).toBe(true),
    ],
  ] as const)('malformed-json %s on speakers', async (variant, check) => {
    const e = await emulator();
    e.inject({ kind: 'malformed-json', variant }, { route: 'speakers' });
    const reply = await call(e, '/speech/speakers');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    check(reply.body.toString());
    expect(json(await call(e, '/speech/speakers'))).toHaveLength(DEFAULT_SPEAKERS.length);
  });

  it('malformed-json on generate answers a 500 with broken JSON, uncharged', async () => {
    const e = await emulator();
    e.inject({ kind: 'malformed-json' });
    const reply = await generate(e, body);
    expect(reply.status).toBe(500);
    expect(() => json(reply)).toThrow();
    expect(e.balanceUsd).toBe(10);
  });

  it('headers overrides or omits X-* headers on success and error', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({
      kind: 'headers',
      headers: { 'X-Cost-USD': null, 'X-Balance-USD': 'lots', 'X-Audio-Duration': null },
    });
    const reply = await generate(e, body);
    expect(reply.status).toBe(200);
    expect(reply.headers['x-cost-usd']).toBeUndefined();
    expect(reply.headers['x-audio-duration']).toBeUndefined();
    expect(reply.headers['x-balance-usd']).toBe('lots');
    expect(reply.headers['x-sample-rate']).toBe('24000');
    e.inject({ kind: 'headers', headers: { 'X-Request-Id': null } });
    const error = await generate(e, { text: '' });
    expect(error.status).toBe(422);
    expect(error.headers['x-request-id']).toBeUndefined();
  });

  it('queues faults of the same kind instead of spending them on one request', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'status', status: 503 });
    e.inject({ kind: 'status', status: 429, retryAfter: '1' });
    e.inject({ kind: 'status', status: 500 }, { times: 0 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await generate(e, body)).status);
    expect(statuses).toEqual([503, 429, 200]);
  });

  it('stall and reset also apply to the speakers body', async () => {
    const e = await emulator();
    e.inject({ kind: 'stall', afterBytes: 10, ms: Number.POSITIVE_INFINITY }, { route: 'speakers' });
    const stalled = await call(e, '/speech/speakers', { abortAfterIdleMs: 200 });
    expect([stalled.status, stalled.body.length, stalled.error?.message]).toEqual([200, 10, 'idle']);
    e.inject({ kind: 'reset', afterBytes: 50 }, { route: 'speakers' });
    const reset = await call(e, '/speech/speakers');
    expect(reset.body.length).toBe(50);
    expect(reset.error).toBeDefined();
    expect(json(await call(e, '/speech/speakers'))).toHaveLength(DEFAULT_SPEAKERS.length);
  });

  /** A generate request the client hangs up on once `ready` holds; resolves when the emulator let it go. */
  const hangUp = async (e: TtsEmulator, ready: () => boolean): Promise<void> => {
    const controller = new AbortController();
    const pending = fetch(`${e.baseUrl}/speech/generate`, {
      method: 'POST',
      headers: { 'X-API-Key': e.apiKey },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    await expect.poll(ready).toBe(true);
    controller.abort();
    await expect(pending).rejects.toThrow();
    await expect.poll(() => e.openResponses()).toBe(0);
  };

  it('a client that hangs up during delay-headers is not charged', async () => {
    const e = await emulator();
    e.inject({ kind: 'delay-headers', ms: 5_000 });
    await hangUp(e, () => e.requests.length === 1);
    expect(e.requests[0]).toMatchObject({ status: 0, chargedUsd: 0 });
    expect(e.balanceUsd).toBe(10);
  });

  it('a client that hangs up while a charged answer is on its way back has still paid (chargedLatencyMs)', async () => {
    const e = await emulator({ chargedLatencyMs: 5_000 });
    await hangUp(e, () => (e.requests[0]?.chargedUsd ?? 0) > 0);
    expect(e.requests[0]?.status).toBe(0);
    expect(e.balanceUsd).toBeLessThan(10);
  });

  it('combines faults injected together', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    e.inject({ kind: 'content-type', contentType: 'application/octet-stream' });
    e.inject({ kind: 'reset', afterBytes: 200 });
    const reply = await generate(e, body);
    expect(reply.headers['content-type']).toBe('application/octet-stream');
    expect(reply.body.length).toBe(200);
  });
});

describe('connections', () => {
  it('keeps connections alive between requests', async () => {
    const e = await emulator({ speed: Number.POSITIVE_INFINITY });
    const first = await fetch(`${e.baseUrl}/speech/speakers`, { headers: { 'X-API-Key': e.apiKey } });
    expect(first.headers.get('connection')).toBe('keep-alive');
    await first.arrayBuffer();
  });

  it('stops writing when the client hangs up mid-stream and keeps serving', async () => {
    const e = await emulator({ speed: 2 });
    const reply = await generate(
      e,
      { text: 'x'.repeat(50), speaker_id: speaker(0).id },
      { abortAfterBytes: 200 },
    );
    expect(reply.error?.message).toBe('aborted by test');
    expect(e.requests[0]?.chargedUsd).toBe(0.005);
    await expect.poll(() => e.openResponses()).toBe(0);
    // Charged, and never completed: the client left mid-download.
    expect(e.requests[0]?.completedAt).toBeUndefined();
    expect((await call(e, '/speech/speakers')).status).toBe(200);
    expect(e.requests[1]?.completedAt).toBeGreaterThanOrEqual(e.requests[1]?.receivedAt ?? Number.NaN);
  });
});
