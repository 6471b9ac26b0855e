import type { Readable } from 'node:stream';
import { inspect } from 'node:util';
import { Agent, buildConnector } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseWav } from '../../emulators/support/audio.ts';
import { readOggOpus } from '../../emulators/support/ogg.ts';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { createLogger } from '../../src/log.ts';
import {
  createTtsClient,
  type GenerateRequest,
  mayHaveCharged,
  type TtsClient,
  type TtsClientOptions,
  TtsError,
} from '../../src/tts/index.ts';
import { freePort } from '../support/net.ts';

const BASE_PATH = '/gateway/tts/v1';
const BELLA = '0b5a6d4e-3f1c-4a8e-9d2b-7c1e5f3a9b01';
const UNKNOWN_SPEAKER = '99999999-9999-4999-8999-999999999999';

let emu: TtsEmulator;
let clients: TtsClient[];
let agents: Agent[];
let logLines: string[];
let sleeps: number[];

beforeEach(async () => {
  emu = await startTtsEmulator({ basePath: BASE_PATH, speed: Infinity });
  clients = [];
  agents = [];
  logLines = [];
  sleeps = [];
});

afterEach(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await Promise.all(agents.map((agent) => agent.destroy()));
  await emu.close();
});

/** A client of the emulator whose backoff sleeps are recorded, not waited, and whose logs are kept unredacted. */
function client(options: Partial<TtsClientOptions> = {}): TtsClient {
  const created = createTtsClient({
    baseUrl: emu.baseUrl,
    apiKey: emu.apiKey,
    form: 'current',
    // No `secrets`: a leak must show up in the captured lines, not be scrubbed away.
    logger: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
    random: () => 0,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...options,
  });
  clients.push(created);
  return created;
}

const say = (change: Partial<GenerateRequest> = {}): GenerateRequest => ({
  text: 'Hello there',
  speakerId: BELLA,
  ...change,
});

async function drain(audio: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of audio) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function rejection(promise: Promise<unknown>): Promise<TtsError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TtsError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('speakers', () => {
  it('lists the speakers under the full base path with the key header', async () => {
    const speakers = await client().listSpeakers();
    expect(speakers.map((speaker) => speaker.id)).toStrictEqual(emu.speakers.map((speaker) => speaker.id));
    expect(speakers.find((speaker) => speaker.name === 'Nova')).toMatchObject({
      gender: null,
      languages: null,
    });
    expect(emu.requests).toHaveLength(1);
    expect(emu.requests[0]).toMatchObject({ method: 'GET', path: `${BASE_PATH}/speech/speakers` });
    expect(emu.requests[0]?.headers['x-api-key']).toBe(emu.apiKey);
  });

  it('keeps a base URL with a trailing slash intact', async () => {
    await client({ baseUrl: `${emu.baseUrl}/` }).listSpeakers();
    expect(emu.requests[0]?.path).toBe(`${BASE_PATH}/speech/speakers`);
  });

  it('reports a base URL missing a segment as a path problem', async () => {
    const error = await rejection(client({ baseUrl: emu.baseUrl.replace('/gateway', '') }).listSpeakers());
    expect(error).toMatchObject({ code: 'TTS_SERVICE', status: 404 });
    expect(error.message).toContain('TTS_BASE_URL');
  });

  it('makes one request for many concurrent callers and reuses it within the TTL', async () => {
    let now = 1_000;
    const tts = client({ now: () => now, speakersTtlMs: 60_000 });
    const lists = await Promise.all(Array.from({ length: 10 }, () => tts.speakers()));
    expect(new Set(lists).size).toBe(1);
    expect(emu.requests).toHaveLength(1);
    now += 59_999;
    await tts.speakers();
    expect(emu.requests).toHaveLength(1);
    now += 1;
    // Expired: answered from the old list while one refresh runs behind it.
    expect(await tts.speakers()).toBe(lists[0]);
    await vi.waitFor(async () => expect(await tts.speakers()).not.toBe(lists[0]));
    expect(emu.requests).toHaveLength(2);
    await tts.speakers({ refresh: true });
    expect(emu.requests).toHaveLength(3);
  });

  it('answers from an expired list at once while a refresh runs behind it', async () => {
    let now = 1_000;
    const tts = client({ now: () => now, speakersTtlMs: 60_000 });
    const first = await tts.speakers();
    now += 60_000;
    // The service now takes a while to list: the expired list answers (the same object, not a new listing).
    emu.inject({ kind: 'delay-headers', ms: 1_500 }, { route: 'speakers' });
    expect(await tts.speakers()).toBe(first);
    await vi.waitFor(() => expect(emu.requests).toHaveLength(2));
    // Once the refresh lands, the new listing answers.
    await vi.waitFor(async () => expect(await tts.speakers()).not.toBe(first), { timeout: 5_000 });
  });

  it('serves the previous list when a refresh fails, and fails when there is none', async () => {
    const tts = client({ retry: { maxRetries: 0 } });
    emu.inject({ kind: 'status', status: 500 }, { route: 'speakers' });
    expect((await rejection(tts.speakers())).code).toBe('TTS_SERVICE');
    const first = await tts.speakers();
    emu.inject({ kind: 'status', status: 500 }, { route: 'speakers' });
    expect(await tts.speakers({ refresh: true })).toBe(first);
    expect(emu.requests).toHaveLength(3);
  });

  it.each([
    ['not-json', 'malformed JSON'],
    ['wrong-shape', 'the body should be an array'],
    ['bad-items', 'speakers[0]'],
  ] as const)('refuses a %s listing with a protocol error naming the problem', async (variant, expected) => {
    emu.inject({ kind: 'malformed-json', variant }, { route: 'speakers' });
    const error = await rejection(client().listSpeakers());
    expect(error.code).toBe('TTS_PROTOCOL');
    expect(error.message).toContain(expected);
    expect(emu.requests).toHaveLength(1);
  });

  it('refuses a listing that is not JSON by content type', async () => {
    emu.inject({ kind: 'content-type', contentType: 'text/html' }, { route: 'speakers' });
    const error = await rejection(client().listSpeakers());
    expect(error.code).toBe('TTS_PROTOCOL');
    expect(error.message).toContain('text/html');
  });
});

describe('generate', () => {
  it('streams Ogg Opus in the current form and reads every header', async () => {
    const result = await client().generate(say({ temperature: 1.5, language: 'en' }));
    const audio = await drain(result.audio);
    const record = emu.requests[0];
    expect(record?.body).toStrictEqual({
      text: 'Hello there',
      speaker_id: BELLA,
      language: 'en',
      format: 'opus',
      temperature: 1.5,
    });
    expect(record?.path).toBe(`${BASE_PATH}/speech/generate`);
    expect(readOggOpus(audio).packets.length).toBeGreaterThan(0);
    expect(result).toMatchObject({
      format: 'opus',
      contentType: 'audio/ogg; codecs=opus',
      sampleRate: 24_000,
      durationS: 0.44,
      costUsd: record?.chargedUsd,
      balanceUsd: emu.balanceUsd,
      requestId: record?.requestId,
      attempts: 1,
    });
  });

  it('speaks the variant form: wav, and never a temperature', async () => {
    emu.configure({ form: 'variant' });
    const result = await client({ form: 'variant' }).generate(say({ temperature: 1.5 }));
    const wav = parseWav(await drain(result.audio));
    expect(emu.requests[0]?.body).toStrictEqual({ text: 'Hello there', speaker_id: BELLA, format: 'wav' });
    expect(result).toMatchObject({ format: 'wav', contentType: 'audio/wav' });
    expect(wav.samples.length).toBeGreaterThan(0);
  });

  it('reads missing and malformed headers as undefined, never NaN', async () => {
    emu.inject({
      kind: 'headers',
      headers: {
        'X-Cost-USD': 'abc',
        'X-Balance-USD': null,
        'X-Sample-Rate': '24k',
        'X-Audio-Duration': '',
        'X-Request-Id': null,
      },
    });
    const result = await client().generate(say());
    await drain(result.audio);
    expect(result).toMatchObject({
      costUsd: undefined,
      balanceUsd: undefined,
      sampleRate: undefined,
      durationS: undefined,
      requestId: undefined,
    });
  });

  it.each<[string, Partial<GenerateRequest>, string]>([
    ['blank text', { text: '   ' }, 'text'],
    ['over-long text', { text: 'a'.repeat(30_001) }, 'text'],
    ['a speaker name', { speakerId: 'Bella' }, 'speakerId'],
    ['French', { language: 'fr' }, 'language'],
    ['a cold temperature', { temperature: 0.1 }, 'temperature'],
    ['a wav format', { format: 'wav' }, 'format'],
  ])('refuses %s before sending anything', async (_name, change, field) => {
    const tts = client();
    expect(tts.validate(say(change))).toMatchObject({ field, local: true });
    const error = await rejection(tts.generate(say(change)));
    expect(error).toMatchObject({ code: 'TTS_INVALID_REQUEST', local: true, field });
    expect(emu.requests).toHaveLength(0);
  });

  it('accepts exactly 30 000 characters of emoji', async () => {
    emu.balanceUsd = 100;
    const result = await client().generate(say({ text: '😀'.repeat(30_000) }));
    result.audio.destroy();
    expect(emu.requests[0]?.status).toBe(200);
  });

  it('sends its request body in a buffer of its own, not a slab of the shared pool the response would keep', async () => {
    const bodies: unknown[] = [];
    const base = new Agent();
    agents.push(base);
    const agent = base.compose((dispatch) => (options, handler) => {
      bodies.push(options.body);
      return dispatch(options, handler);
    });
    const audio = await client({ dispatcher: agent }).generate(say({ text: 'Hello from a body of its own' }));
    await drain(audio.audio);
    expect(bodies).toHaveLength(1);
    const body = bodies[0] as Uint8Array;
    expect(body).toBeInstanceOf(Uint8Array);
    expect(body.buffer.byteLength).toBe(body.byteLength);
    expect(JSON.parse(Buffer.from(body).toString('utf8'))).toMatchObject({
      text: 'Hello from a body of its own',
    });
  });
});

describe('errors from the service', () => {
  it('401: a wrong key is an authentication error', async () => {
    const error = await rejection(client({ apiKey: 'ttsemu_live_wrongwrongwrongwrong' }).generate(say()));
    expect(error).toMatchObject({ code: 'TTS_AUTHENTICATION', status: 401 });
    expect(error.requestId).toBe(emu.requests[0]?.requestId);
  });

  it('402: an empty balance is an insufficient-balance error with the balance', async () => {
    emu.balanceUsd = 0.0001;
    const error = await rejection(client().generate(say()));
    expect(error).toMatchObject({ code: 'TTS_INSUFFICIENT_BALANCE', status: 402, balanceUsd: 0.0001 });
    expect(emu.requests).toHaveLength(1);
  });

  it('404: an unknown speaker', async () => {
    const error = await rejection(client().generate(say({ speakerId: UNKNOWN_SPEAKER })));
    expect(error).toMatchObject({ code: 'TTS_UNKNOWN_SPEAKER', status: 404 });
  });

  it('422: the service refusing a field is a non-local invalid request naming it', async () => {
    // A client configured for the wrong form: the service, not the client, refuses the format.
    emu.configure({ form: 'variant' });
    const error = await rejection(client({ form: 'current' }).generate(say()));
    expect(error).toMatchObject({ code: 'TTS_INVALID_REQUEST', status: 422, local: false, field: 'format' });
  });

  it.each<[number, string | object, string, string]>([
    [400, { error: { message: 'Malformed JSON body' } }, 'TTS_INVALID_REQUEST', 'Malformed JSON body'],
    [413, 'Payload Too Large', 'TTS_INVALID_REQUEST', 'Payload Too Large'],
    [403, '"Forbidden for this plan"', 'TTS_AUTHENTICATION', 'Forbidden for this plan'],
    [403, { message: 'Not enough credits' }, 'TTS_INSUFFICIENT_BALANCE', 'Not enough credits'],
    [500, '<html><head><title>Internal Error</title></head></html>', 'TTS_SERVICE', 'Internal Error'],
    [502, '', 'TTS_SERVICE', 'HTTP 502'],
  ])('%i with %j → %s', async (status, body, code, text) => {
    emu.inject({
      kind: 'status',
      status,
      body,
      ...(typeof body === 'string' && body.startsWith('<') ? { contentType: 'text/html' } : {}),
    });
    const error = await rejection(client().generate(say()));
    expect(error).toMatchObject({ code, status });
    expect(error.message).toContain(text);
  });

  it('a server error whose JSON is cut short still gives a readable error', async () => {
    emu.inject({ kind: 'malformed-json' });
    const error = await rejection(client().generate(say()));
    expect(error).toMatchObject({ code: 'TTS_SERVICE', status: 500 });
    expect(error.message).toContain('Upstream');
  });

  it('a success that is not audio is a protocol error, and is not retried', async () => {
    emu.inject({ kind: 'content-type', contentType: 'text/html; charset=utf-8' });
    const error = await rejection(client().generate(say()));
    expect(error.code).toBe('TTS_PROTOCOL');
    expect(error.message).toContain('text/html');
    expect(emu.requests).toHaveLength(1);
  });

  it('wav audio when opus was asked for is a protocol error', async () => {
    emu.inject({ kind: 'content-type', contentType: 'audio/wav' });
    expect((await rejection(client().generate(say()))).code).toBe('TTS_PROTOCOL');
  });

  it('reads only the first few KiB of a huge error body', async () => {
    emu.inject({ kind: 'status', status: 500, body: 'x'.repeat(2_000_000) });
    const error = await rejection(client().generate(say()));
    expect(error.code).toBe('TTS_SERVICE');
    expect(error.message.length).toBeLessThan(400);
  });
});

describe('retries', () => {
  it.each([408, 429, 500, 503])('listing retries %i twice, then gives up', async (status) => {
    emu.inject({ kind: 'status', status }, { route: 'speakers', times: 5 });
    const error = await rejection(client().listSpeakers());
    expect(error.status).toBe(status);
    expect(emu.requests).toHaveLength(3);
    expect(sleeps).toStrictEqual([500, 1_000]);
  });

  it.each([400, 401, 402, 404])('listing does not retry %i', async (status) => {
    emu.inject({ kind: 'status', status }, { route: 'speakers', times: 5 });
    await rejection(client().listSpeakers());
    expect(emu.requests).toHaveLength(1);
  });

  it('listing honours Retry-After up to the limit', async () => {
    emu.inject({ kind: 'status', status: 429, retryAfter: '3' }, { route: 'speakers' });
    await client().listSpeakers();
    expect(sleeps).toStrictEqual([3_000]);
  });

  it('a Retry-After over 60 s ends retrying with the rate-limit error', async () => {
    emu.inject({ kind: 'status', status: 429, retryAfter: '120' }, { times: 5 });
    const error = await rejection(client().generate(say()));
    expect(error).toMatchObject({ code: 'TTS_RATE_LIMITED', retryAfterMs: 120_000 });
    expect(emu.requests).toHaveLength(1);
    expect(sleeps).toStrictEqual([]);
  });

  it('generate retries 429 and 503 (nothing charged) and counts attempts', async () => {
    emu.inject({ kind: 'status', status: 429, retryAfter: '1' });
    const first = await client().generate(say());
    await drain(first.audio);
    emu.inject({ kind: 'status', status: 503 });
    const second = await client().generate(say());
    await drain(second.audio);
    expect([first.attempts, second.attempts]).toStrictEqual([2, 2]);
    expect(sleeps).toStrictEqual([1_000, 500]);
    expect(emu.requests.filter((request) => request.chargedUsd > 0)).toHaveLength(2);
  });

  it('generate gives up after two retries of 429', async () => {
    emu.inject({ kind: 'status', status: 429, retryAfter: '1' }, { times: 5 });
    const error = await rejection(client().generate(say()));
    expect(error).toMatchObject({ code: 'TTS_RATE_LIMITED', status: 429, retryAfterMs: 1_000 });
    expect(emu.requests).toHaveLength(3);
  });

  it.each([500, 502, 504])('generate does not retry %i: the service may have charged', async (status) => {
    emu.inject({ kind: 'status', status }, { times: 5 });
    await rejection(client().generate(say()));
    expect(emu.requests).toHaveLength(1);
  });

  it('generate is never retried once audio has started', async () => {
    emu.configure({ msPerChar: 200 });
    emu.inject({ kind: 'reset', afterBytes: 300 });
    const result = await client().generate(say());
    const error = await rejection(drain(result.audio));
    expect(error).toMatchObject({ code: 'TTS_CONNECTION', requestSent: true });
    expect(emu.requests).toHaveLength(1);
    expect(sleeps).toStrictEqual([]);
  });

  it('generate retries a refused connection, which cannot have been charged', async () => {
    const port = await freePort();
    const error = await rejection(client({ baseUrl: `http://127.0.0.1:${port}/v1` }).generate(say()));
    expect(error).toMatchObject({ code: 'TTS_CONNECTION', requestSent: false });
    expect(sleeps).toStrictEqual([500, 1_000]);
    expect(error.message).toContain('ECONNREFUSED');
  });
});

describe('timeouts', () => {
  it('connect: a slow connection times out and generate is retried, nothing sent', async () => {
    let connects = 0;
    const connector = buildConnector({});
    const agent = new Agent({
      connect: (options, callback) => {
        connects += 1;
        setTimeout(() => connector(options, callback), 300);
      },
    });
    agents.push(agent);
    const error = await rejection(client({ dispatcher: agent, timeouts: { connectMs: 50 } }).generate(say()));
    expect(error).toMatchObject({ code: 'TTS_TIMEOUT', phase: 'connect' });
    expect(connects).toBe(3);
    expect(emu.requests).toHaveLength(0);
  });

  it('first byte: generate is not retried, listing is', async () => {
    emu.inject({ kind: 'delay-headers', ms: 400 }, { route: 'any', times: 4 });
    const tts = client({ timeouts: { firstByteMs: 60 } });
    const error = await rejection(tts.generate(say()));
    expect(error).toMatchObject({ code: 'TTS_TIMEOUT', phase: 'first-byte' });
    expect(sleeps).toStrictEqual([]);
    const listing = await rejection(tts.listSpeakers());
    expect(listing).toMatchObject({ code: 'TTS_TIMEOUT', phase: 'first-byte' });
    expect(sleeps).toStrictEqual([500, 1_000]);
  });

  it('idle: a stall mid-stream errors the audio stream even when nobody reads', async () => {
    emu.configure({ msPerChar: 200 });
    emu.inject({ kind: 'stall', afterBytes: 500, ms: Number.POSITIVE_INFINITY });
    const result = await client({ timeouts: { idleMs: 80 } }).generate(say());
    // Not reading: the error must arrive on its own.
    const error = await new Promise<unknown>((resolve) => result.audio.once('error', resolve));
    expect(error).toMatchObject({ code: 'TTS_TIMEOUT', phase: 'idle', status: 200 });
    expect(result.audio.destroyed).toBe(true);
  });

  it('idle: a short pause within the limit is not a stall', async () => {
    emu.inject({ kind: 'stall', afterBytes: 500, ms: 50 });
    const result = await client({ timeouts: { idleMs: 2_000 } }).generate(say());
    expect((await drain(result.audio)).length).toBeGreaterThan(500);
  });
});

describe('aborts', () => {
  it('an abort before the headers rejects with an aborted error', async () => {
    emu.inject({ kind: 'delay-headers', ms: 2_000 });
    const controller = new AbortController();
    const pending = client().generate(say({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    const error = await rejection(pending);
    expect(error.code).toBe('TTS_ABORTED');
    // The request had reached the service: it may have been charged.
    expect(mayHaveCharged(error)).toBe(true);
  });

  it('an already-aborted signal sends nothing', async () => {
    const error = await rejection(client().generate(say({ signal: AbortSignal.abort() })));
    expect(error.code).toBe('TTS_ABORTED');
    expect(mayHaveCharged(error)).toBe(false);
    expect(emu.requests).toHaveLength(0);
  });

  it('an abort mid-stream errors the audio stream', async () => {
    emu.inject({ kind: 'stall', afterBytes: 500, ms: Number.POSITIVE_INFINITY });
    const controller = new AbortController();
    const result = await client().generate(say({ signal: controller.signal }));
    controller.abort();
    expect((await rejection(drain(result.audio))).code).toBe('TTS_ABORTED');
  });
});

describe('the key', () => {
  it('never appears in a log line, an error message or an error field', async () => {
    const tts = client();
    const errors: TtsError[] = [];
    emu.inject({ kind: 'status', status: 401, body: { message: `key ${emu.apiKey} is revoked` } });
    errors.push(await rejection(tts.generate(say())));
    emu.inject({ kind: 'status', status: 500, body: `upstream refused ${emu.apiKey}` });
    errors.push(await rejection(tts.generate(say())));
    errors.push(await rejection(client({ apiKey: `${emu.apiKey}x` }).listSpeakers()));
    errors.push(await rejection(tts.generate(say({ speakerId: UNKNOWN_SPEAKER }))));
    const port = await freePort();
    errors.push(await rejection(client({ baseUrl: `http://127.0.0.1:${port}/v1` }).listSpeakers()));
    emu.inject({ kind: 'reset', afterBytes: 100 });
    errors.push(await rejection(tts.generate(say()).then((result) => drain(result.audio))));

    expect(errors.map((error) => error.code)).toStrictEqual([
      'TTS_AUTHENTICATION',
      'TTS_SERVICE',
      'TTS_AUTHENTICATION',
      'TTS_UNKNOWN_SPEAKER',
      'TTS_CONNECTION',
      'TTS_CONNECTION',
    ]);
    const text = [...logLines, ...errors.map((error) => inspect(error, { depth: 8, showHidden: true }))].join(
      '\n',
    );
    expect(logLines.length).toBeGreaterThan(5);
    expect(text).not.toContain(emu.apiKey);
    expect(text.toLowerCase()).not.toContain('x-api-key:');
    expect(text).toContain('[redacted]');
  });

  it('log lines name method, path, status, request id and attempt', async () => {
    await client().listSpeakers();
    const line = JSON.parse(logLines.find((entry) => entry.includes('tts response')) ?? '{}') as Record<
      string,
      unknown
    >;
    expect(line).toMatchObject({
      method: 'GET',
      path: `${BASE_PATH}/speech/speakers`,
      status: 200,
      attempt: 1,
    });
    expect(line.requestId).toBe(emu.requests[0]?.requestId);
    expect(typeof line.ms).toBe('number');
  });
});
