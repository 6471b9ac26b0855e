/**
 * TTS service emulator: a real HTTP server on 127.0.0.1 that speaks the interface of
 * shared/spec/tts-service-interface.md, streams tones as Ogg Opus (or WAV in the variant form) over time, and
 * takes injected faults.
 *
 * The interface leaves errors unspecified; this emulator's choices, which the client is tested against:
 * - Every response carries `X-Request-Id`; error bodies are `{"error":{"code","message",...}}` JSON.
 * - Unknown path → 404 `not_found`; known path, wrong method → 405 `method_not_allowed` with `Allow`.
 * - Missing or wrong `X-API-Key` → 401 `unauthorized` (the key is never echoed).
 * - Generate: malformed JSON → 400 `invalid_json`; body not an object, `text` missing / not a string / blank,
 *   `speaker_id` not a UUID, `language` not "en", a `format` the form does not list, `temperature` not a number
 *   in 0.5–2.0 (or present at all in the variant form) → 422 `invalid_parameter` with `param`;
 *   over 30,000 code points → 413 `text_too_long`; unknown speaker → 404 `speaker_not_found`;
 *   cost above balance → 402 `insufficient_balance` with `balance_usd`, nothing charged.
 * - Checks run in that order; cost = code points × price, charged when accepted (before any audio is written),
 *   money in whole micro-dollars so balances never drift and never go negative.
 * - A client that hangs up mid-stream has still paid (the charge happened on acceptance).
 * - Injected faults are consumed by the next matching requests whatever their validity. Faults of different
 *   kinds combine on one request; two of the same kind queue (the earlier one first). 'stall' and 'reset'
 *   apply to the speakers body too; a request whose client hangs up during 'delay-headers' is not charged.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeTone, OPUS_RATE, toneSamples, writeOggOpus } from './ogg.ts';
import { pcmBytes, wavHeader } from './wav.ts';

/** A speaker the emulator serves; `toneHz` is the pitch of the tone it "speaks" with. */
export interface EmulatedSpeaker {
  id: string;
  name: string;
  voiceKey: string;
  gender: string | null;
  languages: string[] | null;
  toneHz: number;
}

/** At least six speakers: UUID ids, one with gender null, language_restrictions null and ["en"], voice_key equal to the id for some and short labels ("af_bella") for others; tones distinct and at least 100 Hz apart (e.g. 220, 330, 440, 550, 660, 880). */
export const DEFAULT_SPEAKERS: readonly EmulatedSpeaker[] = Object.freeze(
  (
    [
      {
        id: '0b5a6d4e-3f1c-4a8e-9d2b-7c1e5f3a9b01',
        name: 'Bella',
        voiceKey: 'af_bella',
        gender: 'female',
        languages: null,
        toneHz: 220,
      },
      {
        id: '1c6b7e5f-4a2d-4b9f-8e3c-8d2f6a4b0c12',
        name: 'Adam',
        voiceKey: 'am_adam',
        gender: 'male',
        languages: ['en'],
        toneHz: 330,
      },
      {
        id: '2d7c8f6a-5b3e-4cab-9f4d-9e3a7b5c1d23',
        name: 'Nova',
        voiceKey: '2d7c8f6a-5b3e-4cab-9f4d-9e3a7b5c1d23',
        gender: null,
        languages: null,
        toneHz: 440,
      },
      {
        id: '3e8d9a7b-6c4f-4dbc-8a5e-af4b8c6d2e34',
        name: 'Emma',
        voiceKey: 'bf_emma',
        gender: 'female',
        languages: ['en'],
        toneHz: 550,
      },
      {
        id: '4f9eab8c-7d5a-4ecd-9b6f-b05c9d7e3f45',
        name: 'George',
        voiceKey: '4f9eab8c-7d5a-4ecd-9b6f-b05c9d7e3f45',
        gender: 'male',
        languages: ['en', 'fr'],
        toneHz: 660,
      },
      {
        id: '5a0fbc9d-8e6b-4fde-8c7a-c16d0e8f4a56',
        name: 'Sky',
        voiceKey: 'af_sky',
        gender: null,
        languages: ['en'],
        toneHz: 880,
      },
    ] satisfies EmulatedSpeaker[]
  ).map((speaker) => Object.freeze(speaker)),
);

/** `n` speakers with distinct names, UUIDs and tones (200 Hz + 10 Hz steps), for paging tests. */
export function manySpeakers(n: number): EmulatedSpeaker[] {
  return Array.from({ length: n }, (_, i) => {
    const id = `00000000-0000-4000-8000-${(i + 1).toString(16).padStart(12, '0')}`;
    return {
      id,
      name: `Speaker ${String(i + 1).padStart(4, '0')}`,
      voiceKey: i % 2 === 0 ? id : `sp_${i + 1}`,
      gender: i % 3 === 0 ? null : i % 3 === 1 ? 'female' : 'male',
      languages: i % 2 === 0 ? null : ['en'],
      toneHz: 200 + 10 * i,
    };
  });
}

/** How the emulator shapes its audio, to exercise demuxer and player edge cases. */
export interface AudioQuirks {
  /** Opus packet duration; Discord needs 20, real services may send 60. */
  frameMs: 20 | 40 | 60;
  /** Split Opus packets across Ogg pages (lacing 255 + continued flag), which prism-media cannot demux. */
  continuedPackets: boolean;
  /** Channels of the Opus stream or WAV. */
  channels: 1 | 2;
}

/** Options of {@link startTtsEmulator}. */
export interface TtsEmulatorOptions {
  /** Path prefix of the API; default '/v1'; may be deeper, e.g. '/gateway/tts/v1'. */
  basePath?: string;
  /** The one valid key; default 'ttsemu_live_' + 32 random hex chars. */
  apiKey?: string;
  /** Which form of the generate contract to enforce; default 'current' (opus, temperature allowed). */
  form?: 'current' | 'variant';
  /** Starting account balance in USD; default 10. */
  balanceUsd?: number;
  /** Price per code point in USD; default 0.0001. */
  pricePerCharUsd?: number;
  /** Audio ms per code point; default 40. */
  msPerChar?: number;
  /** Cap on audio length in ms; default 20_000. */
  maxAudioMs?: number;
  /** Realtime factor the audio is written at; default 4 (1 s of audio over 250 ms); Infinity = all at once. */
  speed?: number;
  /**
   * Ms between charging a generation and its response headers leaving: the way back over a real network, when
   * the service has been paid and the client does not know it yet. Default 0.
   */
  chargedLatencyMs?: number;
  /** Audio quirks; default { frameMs: 20, continuedPackets: false, channels: 1 }. */
  audio?: Partial<AudioQuirks>;
  /** Speakers served; default {@link DEFAULT_SPEAKERS}. */
  speakers?: EmulatedSpeaker[];
  /** Port on 127.0.0.1; default 0 (a random free port). */
  port?: number;
}

/** A misbehaviour applied to upcoming requests by {@link TtsEmulator.inject}. */
export type Fault =
  /** Wait `ms` before doing anything (and so before the response headers). */
  | { kind: 'delay-headers'; ms: number }
  /** Answer `status` with `body` (default an error JSON) instead of handling the request; nothing charged. */
  | { kind: 'status'; status: number; body?: string | object; contentType?: string; retryAfter?: string }
  /** Stop writing the body after `afterBytes` for `ms` (Infinity: until the client or the emulator closes). */
  | { kind: 'stall'; afterBytes: number; ms: number }
  /** Destroy the socket after `afterBytes` of body. */
  | { kind: 'reset'; afterBytes: number }
  /** End the response cleanly after `afterBytes` of body: a 200 whose audio stops short (charged in full). */
  | { kind: 'truncate'; afterBytes: number }
  /** A success with the wrong content type. */
  | { kind: 'content-type'; contentType: string }
  /**
   * Speakers: a 200 whose body is not JSON ('not-json', default), JSON of the wrong shape ('wrong-shape': an
   * object, not an array) or an array whose items lack fields ('bad-items'). Generate: a 500 with broken JSON.
   */
  | { kind: 'malformed-json'; variant?: 'not-json' | 'wrong-shape' | 'bad-items' }
  /** Override response headers (any, typically X-*); null omits one. */
  | { kind: 'headers'; headers: Record<string, string | null> };

/** One request as the emulator saw it. */
export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  /** Headers as received (lower-case names; repeated ones joined with ', '). */
  headers: Record<string, string>;
  /** Parsed JSON body; the raw string when it is not JSON; undefined when empty. */
  body: unknown;
  /** Status sent (0 until the response head is written, and for ever if the client left before it). */
  status: number;
  chargedUsd: number;
  requestId: string;
  /** Date.now() when the request arrived. */
  receivedAt: number;
  /** The kinds of the injected faults this request took (empty for an ordinary one). */
  faults: Fault['kind'][];
}

/** A running emulator. */
export interface TtsEmulator {
  /** e.g. http://127.0.0.1:PORT/v1 (with the base path, no trailing slash). */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly speakers: readonly EmulatedSpeaker[];
  /** Readable and settable (a top-up in a test); rounded to whole micro-dollars, never negative. */
  balanceUsd: number;
  readonly requests: readonly RecordedRequest[];
  /** Applies `fault` to the next `times` (default 1) requests on `route` (default 'generate'). */
  inject(fault: Fault, options?: { times?: number; route?: 'generate' | 'speakers' | 'any' }): void;
  /** Changes settings for requests that arrive from now on. */
  configure(
    options: Partial<
      Pick<
        TtsEmulatorOptions,
        'form' | 'pricePerCharUsd' | 'msPerChar' | 'speed' | 'chargedLatencyMs' | 'audio' | 'speakers'
      >
    >,
  ): void;
  /** Sum charged over all recorded requests, in USD. */
  totalChargedUsd(): number;
  /** Responses not yet finished or abandoned (0 once every client got its body or hung up). */
  openResponses(): number;
  /** Stops listening, ends open streams and connections. */
  close(): Promise<void>;
}

/** Longest accepted text in code points (the spec's 30,000 characters). */
export const MAX_TEXT_CODE_POINTS = 30_000;

/** Sample rate reported in X-Sample-Rate and used for WAV output. */
export const OUTPUT_SAMPLE_RATE = 24_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_BODY_BYTES = 1_048_576;
const WAV_CHUNK_MS = 100;
// Constant bitrate per channel when splitting packets: CBR at this rate makes every packet over 255 bytes.
const SPLIT_BITRATE = 128_000;

/** Audio length in ms the emulator produces for `text` (code points × msPerChar, capped). */
export function expectedDurationMs(
  text: string,
  options: { msPerChar?: number; maxAudioMs?: number } = {},
): number {
  return Math.min([...text].length * (options.msPerChar ?? 40), options.maxAudioMs ?? 20_000);
}

const toMicros = (usd: number): number => Math.max(0, Math.round(usd * 1e6));
const fromMicros = (micros: number): number => micros / 1e6;

interface ActiveFault {
  fault: Fault;
  remaining: number;
  route: 'generate' | 'speakers' | 'any';
}

interface Settings {
  form: 'current' | 'variant';
  pricePerCharUsd: number;
  msPerChar: number;
  maxAudioMs: number;
  speed: number;
  chargedLatencyMs: number;
  audio: AudioQuirks;
  speakers: EmulatedSpeaker[];
}

// An expected refusal returned as a value (validation is not exceptional), rendered as `{"error": body}`.
class ErrorReply {
  readonly status: number;
  readonly body: { code: string; message: string; [extra: string]: unknown };
  constructor(status: number, code: string, message: string, extra: Record<string, unknown> = {}) {
    this.status = status;
    this.body = { code, message, ...extra };
  }
}

/** Starts the emulator on 127.0.0.1 (random port unless `port` is given). */
export async function startTtsEmulator(options: TtsEmulatorOptions = {}): Promise<TtsEmulator> {
  const basePath = `/${(options.basePath ?? '/v1').replace(/^\/+|\/+$/g, '')}`.replace(/^\/$/, '');
  const apiKey = options.apiKey ?? `ttsemu_live_${randomBytes(16).toString('hex')}`;
  const settings: Settings = {
    form: options.form ?? 'current',
    pricePerCharUsd: options.pricePerCharUsd ?? 0.0001,
    msPerChar: options.msPerChar ?? 40,
    maxAudioMs: options.maxAudioMs ?? 20_000,
    speed: options.speed ?? 4,
    chargedLatencyMs: options.chargedLatencyMs ?? 0,
    audio: { frameMs: 20, continuedPackets: false, channels: 1, ...options.audio },
    speakers: [...(options.speakers ?? DEFAULT_SPEAKERS)],
  };
  let balanceMicros = toMicros(options.balanceUsd ?? 10);
  const requests: RecordedRequest[] = [];
  const faults: ActiveFault[] = [];
  const inFlight = new Set<AbortController>();
  const packetCache = new Map<string, Buffer[]>();

  const tonePackets = (hz: number, durationMs: number, audio: AudioQuirks): Buffer[] => {
    const bitrate = audio.continuedPackets ? SPLIT_BITRATE * audio.channels : undefined;
    const key = `${hz}|${durationMs}|${audio.frameMs}|${audio.channels}|${bitrate ?? 'vbr'}`;
    const cached = packetCache.get(key);
    if (cached) return cached;
    const packets = encodeTone({
      hz,
      durationMs,
      frameMs: audio.frameMs,
      channels: audio.channels,
      ...(bitrate === undefined ? {} : { bitrate }),
    });
    // Tests repeat the same phrases; encoding 20 s of Opus costs tens of ms of a shared core.
    if (packetCache.size >= 64) packetCache.delete(packetCache.keys().next().value ?? '');
    packetCache.set(key, packets);
    return packets;
  };

  /** Takes, for this request, the earliest queued fault of each kind that matches its route. */
  const takeFaults = (route: 'generate' | 'speakers' | null): Fault[] => {
    const taken: Fault[] = [];
    for (const active of faults) {
      if (active.route !== 'any' && active.route !== route) continue;
      // Two faults of one kind queue up (503 then 429) instead of both landing on this request.
      if (taken.some((f) => f.kind === active.fault.kind)) continue;
      taken.push(active.fault);
      active.remaining--;
    }
    for (let i = faults.length - 1; i >= 0; i--) if ((faults[i]?.remaining ?? 0) <= 0) faults.splice(i, 1);
    return taken;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> => {
    const requestId = `req_${randomBytes(12).toString('hex')}`;
    const receivedAt = Date.now();
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://emulator.invalid');
    const record: RecordedRequest = {
      method: req.method ?? '',
      path: url.pathname,
      headers: flattenHeaders(req),
      body: raw.parsed,
      status: 0,
      chargedUsd: 0,
      requestId,
      receivedAt,
      faults: [],
    };
    requests.push(record);

    const route =
      url.pathname === `${basePath}/speech/generate`
        ? 'generate'
        : url.pathname === `${basePath}/speech/speakers`
          ? 'speakers'
          : null;
    const active = takeFaults(route);
    record.faults = active.map((fault) => fault.kind);
    const find = <K extends Fault['kind']>(kind: K): Extract<Fault, { kind: K }> | undefined =>
      active.find((f): f is Extract<Fault, { kind: K }> => f.kind === kind);

    const delay = find('delay-headers');
    if (delay) await wait(delay.ms, signal);
    // A client that hung up (or an emulator that closed) during the delay gets nothing and pays nothing.
    if (signal.aborted) return;

    const overrides: Record<string, string | null> = {};
    for (const f of active) if (f.kind === 'headers') Object.assign(overrides, f.headers);
    const head = (status: number, headers: Record<string, string>): void => {
      record.status = status;
      res.statusCode = status;
      res.setHeader('X-Request-Id', requestId);
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      for (const [name, value] of Object.entries(overrides)) {
        if (value === null) res.removeHeader(name);
        else res.setHeader(name, value);
      }
    };
    const sendError = (error: ErrorReply, headers: Record<string, string> = {}): void => {
      head(error.status, { 'Content-Type': 'application/json', ...headers });
      res.end(JSON.stringify({ error: error.body }));
    };

    const status = find('status');
    if (status) {
      const body =
        status.body === undefined
          ? JSON.stringify({ error: { code: 'injected_fault', message: `Injected status ${status.status}` } })
          : typeof status.body === 'string'
            ? status.body
            : JSON.stringify(status.body);
      const contentType =
        status.contentType ??
        (typeof status.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json');
      head(status.status, {
        'Content-Type': contentType,
        ...(status.retryAfter === undefined ? {} : { 'Retry-After': status.retryAfter }),
      });
      res.end(body);
      return;
    }

    if (route === null) return sendError(new ErrorReply(404, 'not_found', `No route for ${url.pathname}`));
    const allowed = route === 'generate' ? 'POST' : 'GET';
    if (req.method !== allowed) {
      return sendError(new ErrorReply(405, 'method_not_allowed', `Use ${allowed} on ${url.pathname}`), {
        Allow: allowed,
      });
    }
    if (req.headers['x-api-key'] !== apiKey) {
      return sendError(new ErrorReply(401, 'unauthorized', 'Missing or invalid API key'));
    }

    const malformed = find('malformed-json');
    const contentType = find('content-type');
    if (route === 'speakers') {
      const payload = malformed
        ? malformedSpeakers(malformed.variant ?? 'not-json', settings.speakers)
        : JSON.stringify(settings.speakers.map(toWireSpeaker));
      head(200, { 'Content-Type': contentType?.contentType ?? 'application/json' });
      res.flushHeaders();
      const body = [{ atMs: 0, data: Buffer.from(payload, 'utf8') }];
      await streamChunks(
        res,
        body,
        Number.POSITIVE_INFINITY,
        find('stall'),
        find('reset'),
        signal,
        find('truncate'),
      );
      return;
    }

    if (malformed) {
      head(500, { 'Content-Type': 'application/json' });
      res.end('{"error":{"code":"internal_error","message":"Upstream');
      return;
    }
    const accepted = validateGenerate(raw, settings, balanceMicros);
    if (accepted instanceof ErrorReply) return sendError(accepted);

    // Charged on acceptance: whatever happens to the stream afterwards, the service has done the work.
    balanceMicros -= accepted.costMicros;
    record.chargedUsd = fromMicros(accepted.costMicros);
    if (settings.chargedLatencyMs > 0) await wait(settings.chargedLatencyMs, signal);
    if (signal.aborted) return;
    const audio = { ...settings.audio };
    const durationMs = expectedDurationMs(accepted.text, settings);
    const wav = settings.form === 'variant';
    const chunks = wav
      ? wavChunks(accepted.speaker.toneHz, durationMs, audio.channels)
      : oggChunks(tonePackets(accepted.speaker.toneHz, durationMs, audio), durationMs, audio);
    head(200, {
      'Content-Type': contentType?.contentType ?? (wav ? 'audio/wav' : 'audio/ogg; codecs=opus'),
      'X-Sample-Rate': String(OUTPUT_SAMPLE_RATE),
      'X-Audio-Duration': String(Math.round(durationMs) / 1000),
      'X-Cost-USD': String(fromMicros(accepted.costMicros)),
      'X-Balance-USD': String(fromMicros(balanceMicros)),
    });
    res.flushHeaders();
    await streamChunks(res, chunks, settings.speed, find('stall'), find('reset'), signal, find('truncate'));
  };

  const server = createServer((req, res) => {
    const controller = new AbortController();
    inFlight.add(controller);
    // 'close' fires when the response is done or the client went away: either way stop writing.
    res.once('close', () => {
      controller.abort();
      inFlight.delete(controller);
    });
    handle(req, res, controller.signal).catch((error: unknown) => {
      if (!res.headersSent && res.writable) {
        res.statusCode = 500;
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ error: { code: 'internal_error', message: String(error) } }));
      } else {
        res.destroy();
      }
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}${basePath}`,
    apiKey,
    get speakers() {
      return settings.speakers;
    },
    get balanceUsd() {
      return fromMicros(balanceMicros);
    },
    set balanceUsd(value: number) {
      balanceMicros = toMicros(value);
    },
    requests,
    inject(fault, o = {}) {
      if ((o.times ?? 1) <= 0) return;
      faults.push({ fault, remaining: o.times ?? 1, route: o.route ?? 'generate' });
    },
    configure(o) {
      if (o.form !== undefined) settings.form = o.form;
      if (o.pricePerCharUsd !== undefined) settings.pricePerCharUsd = o.pricePerCharUsd;
      if (o.msPerChar !== undefined) settings.msPerChar = o.msPerChar;
      if (o.speed !== undefined) settings.speed = o.speed;
      if (o.chargedLatencyMs !== undefined) settings.chargedLatencyMs = o.chargedLatencyMs;
      if (o.audio !== undefined) settings.audio = { ...settings.audio, ...o.audio };
      if (o.speakers !== undefined) settings.speakers = [...o.speakers];
    },
    totalChargedUsd() {
      return fromMicros(requests.reduce((sum, r) => sum + toMicros(r.chargedUsd), 0));
    },
    openResponses() {
      return inFlight.size;
    },
    async close() {
      for (const controller of inFlight) controller.abort();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function toWireSpeaker(s: EmulatedSpeaker): Record<string, unknown> {
  return {
    id: s.id,
    name: s.name,
    voice_key: s.voiceKey,
    gender: s.gender,
    language_restrictions: s.languages,
  };
}

function malformedSpeakers(
  variant: 'not-json' | 'wrong-shape' | 'bad-items',
  speakers: EmulatedSpeaker[],
): string {
  switch (variant) {
    case 'not-json':
      return '<html><body>502 Bad Gateway</body></html>';
    case 'wrong-shape':
      return JSON.stringify({ speakers: speakers.map(toWireSpeaker) });
    case 'bad-items':
      return JSON.stringify(speakers.map((s) => ({ name: s.name, gender: 7 })));
  }
}

interface RawBody {
  text: string;
  /** The JSON value, the raw text when it is not JSON, undefined when empty. */
  parsed: unknown;
  json: boolean;
}

async function readBody(req: IncomingMessage): Promise<RawBody> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return { text, parsed: undefined, json: false };
  try {
    return { text, parsed: JSON.parse(text) as unknown, json: true };
  } catch {
    return { text, parsed: text, json: false };
  }
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

interface Accepted {
  text: string;
  speaker: EmulatedSpeaker;
  costMicros: number;
}

function validateGenerate(raw: RawBody, settings: Settings, balanceMicros: number): Accepted | ErrorReply {
  const invalid = (param: string, message: string): ErrorReply =>
    new ErrorReply(422, 'invalid_parameter', message, { param });
  if (!raw.json) return new ErrorReply(400, 'invalid_json', 'Request body must be valid JSON');
  const body = raw.parsed;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return new ErrorReply(422, 'invalid_parameter', 'Request body must be a JSON object', { param: 'body' });
  }
  const fields = body as Record<string, unknown>;
  const text = fields.text;
  if (typeof text !== 'string') return invalid('text', 'text is required and must be a string');
  if (text.trim() === '') return invalid('text', 'text must not be empty');
  const codePoints = [...text].length;
  if (codePoints > MAX_TEXT_CODE_POINTS) {
    return new ErrorReply(413, 'text_too_long', `text is ${codePoints} characters; the maximum is 30000`, {
      max_characters: MAX_TEXT_CODE_POINTS,
    });
  }
  const speakerId = fields.speaker_id;
  if (typeof speakerId !== 'string' || !UUID.test(speakerId)) {
    return invalid('speaker_id', 'speaker_id must be a UUID');
  }
  const speaker = settings.speakers.find((s) => s.id.toLowerCase() === speakerId.toLowerCase());
  if (speaker === undefined)
    return new ErrorReply(404, 'speaker_not_found', `Speaker ${speakerId} not found`);
  if (fields.language !== undefined && fields.language !== 'en') {
    return invalid('language', 'Only language "en" is supported');
  }
  const format = settings.form === 'current' ? 'opus' : 'wav';
  if (fields.format !== undefined && fields.format !== format) {
    return invalid('format', `Only format "${format}" is supported`);
  }
  const temperature = fields.temperature;
  if (temperature !== undefined) {
    if (settings.form === 'variant') return invalid('temperature', 'temperature is not supported');
    if (typeof temperature !== 'number' || !(temperature >= 0.5 && temperature <= 2)) {
      return invalid('temperature', 'temperature must be a number from 0.5 to 2.0');
    }
  }
  const costMicros = Math.round(codePoints * settings.pricePerCharUsd * 1e6);
  if (costMicros > balanceMicros) {
    const balance = fromMicros(balanceMicros);
    return new ErrorReply(
      402,
      'insufficient_balance',
      `Insufficient balance: this request costs $${fromMicros(costMicros)}, the balance is $${balance}`,
      { balance_usd: balance },
    );
  }
  return { text, speaker, costMicros };
}

interface TimedChunk {
  /** Audio time in ms at which this chunk starts (it is written at atMs / speed). */
  atMs: number;
  data: Buffer;
}

function oggChunks(packets: Buffer[], durationMs: number, audio: AudioQuirks): TimedChunk[] {
  const frameSamples = (OPUS_RATE / 1000) * audio.frameMs;
  const pages = writeOggOpus({
    packets,
    channels: audio.channels,
    frameSamples,
    continuedPackets: audio.continuedPackets,
    sampleCount: Math.round((durationMs * OPUS_RATE) / 1000),
  });
  // A page becomes due when the audio before it has "played": the last known granule before it.
  let granule = 0n;
  return pages.map((data) => {
    const chunk = { atMs: Number(granule) / (OPUS_RATE / 1000), data };
    const pageGranule = data.readBigInt64LE(6);
    if (pageGranule > 0n) granule = pageGranule;
    return chunk;
  });
}

function wavChunks(hz: number, durationMs: number, channels: 1 | 2): TimedChunk[] {
  const samples = toneSamples({ hz, durationMs, sampleRate: OUTPUT_SAMPLE_RATE, channels });
  const bytes = pcmBytes(samples);
  const chunks: TimedChunk[] = [
    { atMs: 0, data: wavHeader({ sampleRate: OUTPUT_SAMPLE_RATE, channels, dataBytes: bytes.length }) },
  ];
  const chunkBytes = ((OUTPUT_SAMPLE_RATE * WAV_CHUNK_MS) / 1000) * channels * 2;
  for (let at = 0, i = 0; at < bytes.length; at += chunkBytes, i++) {
    chunks.push({ atMs: i * WAV_CHUNK_MS, data: bytes.subarray(at, at + chunkBytes) });
  }
  return chunks;
}

/** Resolves after `ms` (never, for Infinity) or as soon as `signal` aborts. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = Number.isFinite(ms) ? setTimeout(done, Math.max(0, ms)) : undefined;
    signal.addEventListener('abort', done, { once: true });
  });
}

function write(res: ServerResponse, data: Buffer, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || data.length === 0) return resolve();
    const aborted = (): void => resolve();
    signal.addEventListener('abort', aborted, { once: true });
    // Resolving on the write callback means the bytes reached the socket, which a following reset relies on.
    res.write(data, () => {
      // One listener per write left on the signal made an utterance of 500 pages cost 500 listeners, and each add
      // and remove on it slower: a fifth of the emulated world's CPU while 200 streams were served.
      signal.removeEventListener('abort', aborted);
      resolve();
    });
  });
}

async function streamChunks(
  res: ServerResponse,
  chunks: TimedChunk[],
  speed: number,
  stall: Extract<Fault, { kind: 'stall' }> | undefined,
  reset: Extract<Fault, { kind: 'reset' }> | undefined,
  signal: AbortSignal,
  truncate?: Extract<Fault, { kind: 'truncate' }>,
): Promise<void> {
  let start = Date.now();
  let sent = 0;
  let stalled = false;
  for (const chunk of chunks) {
    const due = Number.isFinite(speed) && speed > 0 ? start + chunk.atMs / speed : 0;
    if (due > Date.now()) await wait(due - Date.now(), signal);
    if (signal.aborted) return;
    let data = chunk.data;
    if (stall && !stalled && sent + data.length >= stall.afterBytes) {
      const head = data.subarray(0, Math.max(0, stall.afterBytes - sent));
      await write(res, head, signal);
      sent += head.length;
      data = data.subarray(head.length);
      stalled = true;
      const before = Date.now();
      await wait(stall.ms, signal);
      if (signal.aborted) return;
      // Pacing resumes from where it stopped instead of bursting to catch up.
      start += Date.now() - before;
    }
    if (reset && sent + data.length >= reset.afterBytes) {
      await write(res, data.subarray(0, Math.max(0, reset.afterBytes - sent)), signal);
      res.socket?.destroy();
      return;
    }
    if (truncate && sent + data.length >= truncate.afterBytes) {
      await write(res, data.subarray(0, Math.max(0, truncate.afterBytes - sent)), signal);
      if (!signal.aborted) res.end();
      return;
    }
    await write(res, data, signal);
    sent += data.length;
  }
  if (!signal.aborted) res.end();
}
