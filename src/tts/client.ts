import { PassThrough, type Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, type Dispatcher, request } from 'undici';
import { silentLogger } from '../log.ts';
import {
  TtsAbortedError,
  TtsConnectionError,
  TtsError,
  TtsProtocolError,
  TtsRateLimitedError,
  TtsServiceError,
  TtsTimeoutError,
  type TtsTimeoutPhase,
} from './errors.ts';
import {
  errorFromResponse,
  headerValue,
  MAX_ERROR_BODY_BYTES,
  parseAudioHeaders,
  type ResponseHeaders,
  requestIdOf,
  retryAfterMs,
} from './response.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelay } from './retry.ts';
import { parseSpeakers } from './speakers.ts';
import type {
  ApiForm,
  AudioFormat,
  GenerateRequest,
  GenerateResult,
  Speaker,
  TtsClient,
  TtsClientOptions,
} from './types.ts';
import { FORMAT_OF_FORM, generateBody, validateGenerateRequest } from './validate.ts';

/** Default per-phase timeouts, in milliseconds. */
export const DEFAULT_TIMEOUTS = { connectMs: 5_000, firstByteMs: 20_000, idleMs: 10_000 } as const;

/** Default lifetime of the cached speaker list: 5 minutes. */
export const DEFAULT_SPEAKERS_TTL_MS = 5 * 60_000;

// A speaker list is small; anything larger is not a speaker list and is not held in memory.
const MAX_SPEAKERS_BODY_BYTES = 1024 * 1024;

// Half a second of speech or more: the reader (the queue's read-ahead) holds the rest of its lead, and what the
// service sent beyond that waits in the socket until it is wanted.
const AUDIO_BUFFER_BYTES = 4 * 1024;

type Operation = 'listing speakers' | 'generating speech';

/** One HTTP exchange whose response headers have arrived. */
interface Exchange {
  readonly status: number;
  readonly headers: ResponseHeaders;
  readonly body: Readable;
  readonly requestId: string | undefined;
  /** Aborted by a timeout, the caller's signal, or {@link Exchange.abort}; the reason is a TtsError. */
  readonly signal: AbortSignal;
  /** (Re)starts the one phase timer; when it runs out the exchange is aborted with a timeout error. */
  arm(phase: TtsTimeoutPhase): void;
  /** Stops the phase timer, e.g. while the reader applies backpressure. */
  disarm(): void;
  /** Ends the exchange early, freeing its socket. */
  abort(reason: TtsError): void;
  /** Maps an error raised while reading the body to a TtsError. */
  mapError(error: unknown): TtsError;
  /** Stops timers and stops listening to the caller's signal; idempotent. */
  finish(): void;
}

/** The outcome of one failed attempt, with what the retry policy needs to know. */
interface Failure {
  readonly error: TtsError;
  readonly retryAfterMs: number | undefined;
}

/**
 * Creates the TTS client.
 *
 * Retries: `listSpeakers` (and so `speakers`) retries connection failures, timeouts, 408, 429 and 5xx. `generate`
 * is billed, so it retries only where the service cannot have charged: the request never reached a connected
 * socket (refused, DNS, connect timeout), or the answer was 429 or 503 (no audio). Once a 2xx arrives nothing is
 * retried: a failure mid-audio errors the `audio` stream. Both make at most `maxRetries` (2) retries, waiting
 * exponential backoff with jitter (0.5 s, 1 s, … capped at 8 s) or the service's `Retry-After` when it is at most
 * 60 s; a longer `Retry-After` ends retrying with the rate-limit error.
 *
 * Timeouts: `connectMs` until the request is on a connected socket, `firstByteMs` from then until the response
 * headers, `idleMs` between body chunks while the client is waiting for data (not while the reader is slow).
 */
export function createTtsClient(options: TtsClientOptions): TtsClient {
  const { baseUrl, apiKey, form } = options;
  const ownAgent = options.dispatcher === undefined ? new Agent({ keepAliveTimeout: 30_000 }) : undefined;
  const dispatcher: Dispatcher = options.dispatcher ?? (ownAgent as Agent);
  const log = options.logger ?? silentLogger;
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const ttlMs = options.speakersTtlMs ?? DEFAULT_SPEAKERS_TTL_MS;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? ((ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }));
  const now = options.now ?? Date.now;
  const trimmedBase = baseUrl.replace(/\/+$/, '');

  // The key travels only in the X-API-Key header; this guards text quoted from bodies and socket errors.
  const redact = (text: string): string =>
    apiKey.length >= 8 ? text.split(apiKey).join('[redacted]') : text;

  let cache: { speakers: readonly Speaker[]; fetchedAt: number } | undefined;
  let inFlight: Promise<readonly Speaker[]> | undefined;

  async function exchange(
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    operation: Operation,
    attempt: number,
    callerSignal: AbortSignal | undefined,
  ): Promise<Exchange> {
    const url = `${trimmedBase}${path}`;
    const logPath = new URL(url).pathname;
    const started = performance.now();
    const controller = new AbortController();
    let requestSent = false;
    let requestId: string | undefined;
    let status: number | undefined;
    let timer: NodeJS.Timeout | undefined;

    const timeoutError = (phase: TtsTimeoutPhase): TtsTimeoutError => {
      const context = { status, requestId };
      switch (phase) {
        case 'connect':
          return new TtsTimeoutError(
            phase,
            `Could not connect to the TTS service within ${timeouts.connectMs} ms while ${operation}.`,
            context,
          );
        case 'first-byte':
          return new TtsTimeoutError(
            phase,
            `The TTS service did not answer within ${timeouts.firstByteMs} ms while ${operation}.`,
            context,
          );
        case 'idle':
          return new TtsTimeoutError(
            phase,
            `The TTS service stopped sending data for ${timeouts.idleMs} ms while ${operation}.`,
            context,
          );
      }
    };
    const msOf = (phase: TtsTimeoutPhase): number =>
      phase === 'connect'
        ? timeouts.connectMs
        : phase === 'first-byte'
          ? timeouts.firstByteMs
          : timeouts.idleMs;
    const disarm = (): void => clearTimeout(timer);
    const arm = (phase: TtsTimeoutPhase): void => {
      disarm();
      timer = setTimeout(() => controller.abort(timeoutError(phase)), msOf(phase));
    };
    const onCallerAbort = (): void =>
      controller.abort(
        new TtsAbortedError(`The TTS request was aborted while ${operation}.`, { requestSent }),
      );
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      disarm();
      callerSignal?.removeEventListener('abort', onCallerAbort);
    };
    const mapError = (error: unknown): TtsError => {
      const reason: unknown = controller.signal.reason;
      if (reason instanceof TtsError) return reason;
      if (error instanceof TtsError) return error;
      return transportError(error, operation, requestSent, { status, requestId }, redact);
    };

    if (callerSignal?.aborted) throw new TtsAbortedError(`The TTS request was aborted before ${operation}.`);
    callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    arm('connect');

    // The interceptor tells "never connected" (safe to retry a billed request) from "sent" and starts the
    // first-byte clock at the right moment, whatever dispatcher was injected.
    const observed = dispatcher.compose(
      (dispatch) =>
        (dispatchOptions, handler): boolean =>
          dispatch(dispatchOptions, {
            onRequestStart(requestController, context) {
              requestSent = true;
              if (!controller.signal.aborted) arm('first-byte');
              handler.onRequestStart?.(requestController, context);
            },
            onRequestUpgrade: (c, statusCode, headers, socket) =>
              handler.onRequestUpgrade?.(c, statusCode, headers, socket),
            onResponseStart: (c, statusCode, headers, message) =>
              handler.onResponseStart?.(c, statusCode, headers, message),
            onResponseData: (c, chunk) => handler.onResponseData?.(c, chunk),
            onResponseEnd: (c, trailers) => handler.onResponseEnd?.(c, trailers),
            onResponseError: (c, error) => handler.onResponseError?.(c, error),
          }),
    );

    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        dispatcher: observed,
        method,
        headers: {
          'x-api-key': apiKey,
          accept: method === 'GET' ? 'application/json' : 'audio/*, application/octet-stream',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
        signal: controller.signal,
        // This client's own timers own every phase, so undici's are off.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    } catch (error) {
      finish();
      const mapped = mapError(error);
      log.warn('tts request failed', {
        method,
        path: logPath,
        attempt,
        ms: Math.round(performance.now() - started),
        code: mapped.code,
        requestSent,
      });
      throw mapped;
    }
    disarm();
    status = response.statusCode;
    const headers = response.headers as ResponseHeaders;
    requestId = requestIdOf(headers);
    const fields = {
      method,
      path: logPath,
      status,
      requestId,
      attempt,
      ms: Math.round(performance.now() - started),
    };
    if (status >= 200 && status < 300) log.debug('tts response', fields);
    else log.warn('tts response', fields);

    return {
      status,
      headers,
      body: response.body,
      requestId,
      signal: controller.signal,
      arm,
      disarm,
      abort: (reason) => {
        controller.abort(reason);
        response.body.destroy();
      },
      mapError,
      finish,
    };
  }

  /** Reads at most `limit` bytes of the body; `truncated` says whether more was left unread. */
  async function readBody(ex: Exchange, limit: number): Promise<{ text: string; truncated: boolean }> {
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    ex.arm('idle');
    try {
      for await (const chunk of ex.body as AsyncIterable<Buffer>) {
        ex.arm('idle');
        chunks.push(chunk);
        size += chunk.length;
        if (size > limit) {
          truncated = true;
          break;
        }
      }
    } catch (error) {
      throw ex.mapError(error);
    } finally {
      ex.disarm();
    }
    return { text: Buffer.concat(chunks).subarray(0, limit).toString('utf8'), truncated };
  }

  async function failureOf(ex: Exchange, operation: Operation): Promise<Failure> {
    const { text } = await readBody(ex, MAX_ERROR_BODY_BYTES);
    return {
      error: errorFromResponse({
        status: ex.status,
        headers: ex.headers,
        bodyText: text,
        operation,
        redact,
        now: now(),
      }),
      retryAfterMs: retryAfterMs(ex.headers, now()),
    };
  }

  /** Waits before the next attempt, or returns false when the policy says to give up. */
  async function backoff(
    failure: Failure,
    retry: number,
    method: string,
    path: string,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    const wait = retryDelay(retry, failure.retryAfterMs, policy, random);
    if (wait === undefined) return false;
    log.info('tts retrying', { method, path, retry: retry + 1, delayMs: wait, code: failure.error.code });
    try {
      await sleep(wait, signal);
    } catch (error) {
      if (signal?.aborted) throw new TtsAbortedError('The TTS request was aborted while waiting to retry.');
      throw error;
    }
    return true;
  }

  async function listSpeakers(listOptions: { signal?: AbortSignal } = {}): Promise<Speaker[]> {
    const path = '/speech/speakers';
    for (let attempt = 1; ; attempt += 1) {
      let failure: Failure;
      try {
        const ex = await exchange('GET', path, undefined, 'listing speakers', attempt, listOptions.signal);
        try {
          if (ex.status >= 200 && ex.status < 300) return await speakersOf(ex);
          failure = await failureOf(ex, 'listing speakers');
        } finally {
          ex.finish();
        }
      } catch (error) {
        if (!(error instanceof TtsError)) throw error;
        failure = { error, retryAfterMs: undefined };
      }
      if (!isRetryableRead(failure.error)) throw failure.error;
      if (!(await backoff(failure, attempt - 1, 'GET', path, listOptions.signal))) throw failure.error;
    }
  }

  async function speakersOf(ex: Exchange): Promise<Speaker[]> {
    const contentType = headerValue(ex.headers, 'content-type') ?? '';
    const context = { status: ex.status, requestId: ex.requestId };
    if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType)) {
      ex.abort(new TtsProtocolError('unexpected content type'));
      throw new TtsProtocolError(
        `The TTS service sent ${contentType === '' ? 'no content type' : `content type ${contentType}`} instead of JSON while listing speakers.`,
        context,
      );
    }
    const { text, truncated } = await readBody(ex, MAX_SPEAKERS_BODY_BYTES);
    if (truncated)
      throw new TtsProtocolError(
        `The TTS service sent a speaker list larger than ${MAX_SPEAKERS_BODY_BYTES} bytes.`,
        context,
      );
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new TtsProtocolError('The TTS service sent malformed JSON while listing speakers.', context);
    }
    return parseSpeakers(json, ex.requestId);
  }

  function speakers(speakerOptions: { refresh?: boolean } = {}): Promise<readonly Speaker[]> {
    if (speakerOptions.refresh !== true && cache !== undefined) {
      // Stale while revalidate: an expired list still answers at once (voices rarely change, and an interaction
      // has three seconds), while a refresh runs behind it.
      if (now() - cache.fetchedAt >= ttlMs && inFlight === undefined) void refreshSpeakers().catch(() => {});
      return Promise.resolve(cache.speakers);
    }
    return refreshSpeakers();
  }

  function refreshSpeakers(): Promise<readonly Speaker[]> {
    if (inFlight !== undefined) return inFlight;
    const pending = listSpeakers().then(
      (list): readonly Speaker[] => {
        cache = { speakers: Object.freeze(list), fetchedAt: now() };
        return cache.speakers;
      },
      (error: unknown): readonly Speaker[] => {
        // A stale list beats no list: voices rarely change, and the next call tries again.
        if (cache === undefined) throw error;
        log.warn('tts speakers refresh failed; using the previous list', { error });
        return cache.speakers;
      },
    );
    inFlight = pending.finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  }

  async function generate(generateRequest: GenerateRequest): Promise<GenerateResult> {
    const invalid = validateGenerateRequest(generateRequest, form);
    if (invalid !== undefined) throw invalid;
    const path = '/speech/generate';
    const body = JSON.stringify(generateBody(generateRequest, form));
    const { signal } = generateRequest;
    for (let attempt = 1; ; attempt += 1) {
      let failure: Failure;
      try {
        const ex = await exchange('POST', path, body, 'generating speech', attempt, signal);
        if (ex.status >= 200 && ex.status < 300) return resultOf(ex, attempt);
        try {
          failure = await failureOf(ex, 'generating speech');
        } finally {
          ex.finish();
        }
      } catch (error) {
        if (!(error instanceof TtsError)) throw error;
        failure = { error, retryAfterMs: undefined };
      }
      if (!isRetryableGenerate(failure.error)) throw failure.error;
      if (!(await backoff(failure, attempt - 1, 'POST', path, signal))) throw failure.error;
    }
  }

  function resultOf(ex: Exchange, attempts: number): GenerateResult {
    const contentType = (headerValue(ex.headers, 'content-type') ?? '').toLowerCase();
    const format = formatOf(contentType, form);
    if (format !== FORMAT_OF_FORM[form]) {
      const error = new TtsProtocolError(
        `The TTS service sent ${contentType === '' ? 'audio without a content type' : contentType} while ${FORMAT_OF_FORM[form]} audio was expected.`,
        { status: ex.status, requestId: ex.requestId },
      );
      ex.abort(error);
      ex.finish();
      throw error;
    }
    return {
      audio: streamAudio(ex),
      contentType,
      format: FORMAT_OF_FORM[form],
      ...parseAudioHeaders(ex.headers),
      requestId: ex.requestId,
      attempts,
    };
  }

  return {
    listSpeakers,
    speakers,
    generate,
    validate: (generateRequest) => validateGenerateRequest(generateRequest, form),
    close: async () => {
      await ownAgent?.close();
    },
  };
}

/** Pipes the response body into a stream of its own, so an idle stall or an abort errors it even unread. */
function streamAudio(ex: Exchange): Readable {
  const audio = new PassThrough({ highWaterMark: AUDIO_BUFFER_BYTES });
  const { body } = ex;
  let done = false;
  const fail = (error: TtsError): void => {
    if (done) return;
    done = true;
    ex.finish();
    audio.destroy(error);
    if (!ex.signal.aborted) ex.abort(error);
  };
  ex.signal.addEventListener('abort', () => fail(ex.mapError(ex.signal.reason)), { once: true });
  body.on('data', (chunk: Buffer) => {
    if (done) return;
    ex.arm('idle');
    // The idle clock measures the service, not the reader: it stops while the buffer is full.
    if (!audio.write(chunk)) {
      ex.disarm();
      body.pause();
    }
  });
  audio.on('drain', () => {
    if (done) return;
    ex.arm('idle');
    body.resume();
  });
  body.on('end', () => {
    if (done) return;
    done = true;
    ex.finish();
    audio.end();
  });
  body.on('error', (error) => fail(ex.mapError(error)));
  audio.on('close', () => {
    if (done) return;
    // The reader gave up (skip, stop): free the socket rather than download audio nobody will hear.
    done = true;
    ex.finish();
    ex.abort(new TtsAbortedError('The audio stream was closed by its reader.'));
  });
  ex.arm('idle');
  return audio;
}

/** The audio format a content type announces; the form's own format when the type is generic or absent. */
function formatOf(contentType: string, form: ApiForm): AudioFormat | undefined {
  const media = contentType.split(';')[0]?.trim() ?? '';
  if (media === '' || media === 'application/octet-stream' || media === 'binary/octet-stream')
    return FORMAT_OF_FORM[form];
  if (/^(?:audio\/(?:ogg|opus|webm)|application\/ogg)$/.test(media)) return 'opus';
  if (/^audio\/(?:wav|wave|x-wav|vnd\.wave)$/.test(media)) return 'wav';
  return undefined;
}

function isRetryableRead(error: TtsError): boolean {
  if (error instanceof TtsConnectionError || error instanceof TtsTimeoutError) return true;
  if (error instanceof TtsRateLimitedError) return true;
  return (
    error instanceof TtsServiceError &&
    error.status !== undefined &&
    (error.status === 408 || error.status >= 500)
  );
}

function isRetryableGenerate(error: TtsError): boolean {
  // Billing happens once the service has the request, so only "never sent" failures and "no, not now" answers.
  if (error instanceof TtsConnectionError) return !error.requestSent;
  if (error instanceof TtsTimeoutError) return error.phase === 'connect';
  if (error instanceof TtsRateLimitedError) return true;
  return error instanceof TtsServiceError && error.status === 503;
}

const TIMEOUT_CODES: Readonly<Record<string, TtsTimeoutPhase>> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect',
  UND_ERR_HEADERS_TIMEOUT: 'first-byte',
  UND_ERR_BODY_TIMEOUT: 'idle',
};

function transportError(
  error: unknown,
  operation: Operation,
  requestSent: boolean,
  context: { status: number | undefined; requestId: string | undefined },
  redact: (text: string) => string,
): TtsError {
  const code =
    typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : undefined;
  const phase = code === undefined ? undefined : TIMEOUT_CODES[code];
  if (phase !== undefined)
    return new TtsTimeoutError(phase, `The TTS service timed out (${phase}) while ${operation}.`, context);
  if (code === 'UND_ERR_ABORTED' || (error instanceof Error && error.name === 'AbortError'))
    return new TtsAbortedError(`The TTS request was aborted while ${operation}.`, {
      ...context,
      requestSent,
    });
  const detail = error instanceof Error && error.message !== '' ? `: ${redact(error.message)}` : '';
  const verb = requestSent
    ? 'The connection to the TTS service failed'
    : 'Could not connect to the TTS service';
  return new TtsConnectionError(
    `${verb} while ${operation}${code === undefined ? '' : ` (${code})`}${detail}`,
    {
      ...context,
      requestSent,
      cause: error,
    },
  );
}
