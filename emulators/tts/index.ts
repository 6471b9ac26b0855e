/**
 * TTS service emulator: a real HTTP server on 127.0.0.1 that speaks the interface of
 * shared/spec/tts-service-interface.md, streams tones as Ogg Opus (or WAV in the variant form) over time, and
 * takes injected faults.
 *
 * This file is the one door and the HTTP server; the parts: `types.ts` (the public types), `speakers.ts` (the
 * catalogue and its wire form), `request.ts` (reading a request, checking a generate body), `money.ts`
 * (micro-dollars), `audio.ts` (durations and timed chunks), `ogg.ts` + `wav.ts` (the bytes), `stream.ts`
 * (pacing a body and its byte-level faults).
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
import {
  type AudioQuirks,
  expectedDurationMs,
  OUTPUT_SAMPLE_RATE,
  oggChunks,
  type TimedChunk,
  wavChunks,
} from './audio.ts';
import { fromMicros, toMicros } from './money.ts';
import { encodeTone } from './ogg.ts';
import { ErrorReply, flattenHeaders, readBody, validateGenerate } from './request.ts';
import { DEFAULT_SPEAKERS, malformedSpeakers, toWireSpeaker } from './speakers.ts';
import { streamChunks, wait } from './stream.ts';
import type { Fault, RecordedRequest, Settings, TtsEmulator, TtsEmulatorOptions } from './types.ts';

export { type AudioQuirks, expectedDurationMs, OUTPUT_SAMPLE_RATE } from './audio.ts';
export { MAX_TEXT_CODE_POINTS } from './request.ts';
export { DEFAULT_SPEAKERS, type EmulatedSpeaker, manySpeakers } from './speakers.ts';
export { handleOf, startTtsEmulatorThread, type TtsEmulatorHandle } from './thread.ts';
export type { Fault, RecordedRequest, TtsEmulator, TtsEmulatorOptions } from './types.ts';

// Constant bitrate per channel when splitting packets: CBR at this rate makes every packet over 255 bytes.
const SPLIT_BITRATE = 128_000;

interface ActiveFault {
  fault: Fault;
  remaining: number;
  route: 'generate' | 'speakers' | 'any';
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
    writeEveryMs: options.writeEveryMs ?? 0,
    chargedLatencyMs: options.chargedLatencyMs ?? 0,
    audio: { frameMs: 20, continuedPackets: false, channels: 1, ...options.audio },
    speakers: [...(options.speakers ?? DEFAULT_SPEAKERS)],
  };
  let balanceMicros = toMicros(options.balanceUsd ?? 10);
  const requests: RecordedRequest[] = [];
  const faults: ActiveFault[] = [];
  const inFlight = new Set<AbortController>();
  const renderings = new Map<string, TimedChunk[]>();

  /**
   * The Ogg Opus body of a tone, encoded and muxed once per tone, length and audio shape: tests repeat the same
   * phrases, and the benchmark has hundreds of servers ask for the same text at once, where encoding and muxing each
   * anew (about 2 ms a request) was CPU the emulated service took from Herald on a shared machine. Responses share
   * the stream's serial number, which Ogg only asks to be unique within one physical stream (one response body).
   */
  const toneChunks = (hz: number, durationMs: number, audio: AudioQuirks): TimedChunk[] => {
    const bitrate = audio.continuedPackets ? SPLIT_BITRATE * audio.channels : undefined;
    // The bitrate is set exactly when packets are split across pages, so it names that shape too.
    const key = `${hz}|${durationMs}|${audio.frameMs}|${audio.channels}|${bitrate ?? 'vbr'}`;
    const cached = renderings.get(key);
    if (cached) return cached;
    const packets = encodeTone({
      hz,
      durationMs,
      frameMs: audio.frameMs,
      channels: audio.channels,
      ...(bitrate === undefined ? {} : { bitrate }),
    });
    const chunks = oggChunks(packets, durationMs, audio);
    if (renderings.size >= 64) renderings.delete(renderings.keys().next().value ?? '');
    renderings.set(key, chunks);
    return chunks;
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
      completedAt: undefined,
      faults: [],
    };
    requests.push(record);
    res.once('finish', () => {
      record.completedAt = Date.now();
    });

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
      await streamChunks(res, body, {
        speed: Number.POSITIVE_INFINITY,
        stall: find('stall'),
        reset: find('reset'),
        truncate: find('truncate'),
        signal,
      });
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
      : toneChunks(accepted.speaker.toneHz, durationMs, audio);
    head(200, {
      'Content-Type': contentType?.contentType ?? (wav ? 'audio/wav' : 'audio/ogg; codecs=opus'),
      'X-Sample-Rate': String(OUTPUT_SAMPLE_RATE),
      'X-Audio-Duration': String(Math.round(durationMs) / 1000),
      'X-Cost-USD': String(fromMicros(accepted.costMicros)),
      'X-Balance-USD': String(fromMicros(balanceMicros)),
    });
    res.flushHeaders();
    const slow = find('slow');
    await streamChunks(res, chunks, {
      // A slow-down from `afterMs` on follows the configured speed until then; without it, the whole body is slow.
      ...(slow?.afterMs === undefined
        ? { speed: slow?.speed ?? settings.speed }
        : { speed: settings.speed, slowAfterMs: slow.afterMs, slowSpeed: slow.speed }),
      writeEveryMs: settings.writeEveryMs,
      stall: find('stall'),
      reset: find('reset'),
      truncate: find('truncate'),
      signal,
    });
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
      if (o.writeEveryMs !== undefined) settings.writeEveryMs = o.writeEveryMs;
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
