/**
 * One HTTP exchange with the TTS service: the request on undici with this client's own phase timers (connect, first
 * byte, idle), whether it reached a connected socket (which decides if a billed request may be retried), and every
 * transport failure mapped to a TtsError whose text never holds the key. The client (client.ts) decides what to
 * send, what to retry and what a response means.
 */
import { PassThrough, type Readable } from 'node:stream';
import { type Dispatcher, request } from 'undici';
import type { Logger } from '../log.ts';
import type { CompletenessJudge } from './complete.ts';
import {
  TtsAbortedError,
  TtsConnectionError,
  TtsError,
  TtsTimeoutError,
  type TtsTimeoutPhase,
} from './errors.ts';
import { type ResponseHeaders, requestIdOf } from './response.ts';

// Half a second of speech or more: the reader (the queue's read-ahead) holds the rest of its lead, and what the
// service sent beyond that waits in the socket until it is wanted.
const AUDIO_BUFFER_BYTES = 4 * 1024;

/**
 * Encodes a request body into a buffer of its own. undici turns a string body into `Buffer.from(text)`, cut from
 * Node's shared pool (64 KiB slabs on Node 24), and keeps it until the response has ended, which for audio is when it
 * has played. So each request kept a whole slab alive: 8 MB in a shard process with 130 streams playing, and in a rush
 * slabs that lived long enough to be promoted, which only a full collection frees.
 */
const encoder = new TextEncoder();

export type Operation = 'listing speakers' | 'generating speech';

/** What every exchange of one client shares. */
export interface ExchangeSettings {
  /** The service's base URL without a trailing slash. */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly dispatcher: Dispatcher;
  readonly timeouts: { readonly connectMs: number; readonly firstByteMs: number; readonly idleMs: number };
  readonly log: Logger;
  /** Takes the key out of text quoted from bodies and socket errors. */
  readonly redact: (text: string) => string;
}

/** One HTTP exchange whose response headers have arrived. */
export interface Exchange {
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

/**
 * Sends one request and resolves once its response headers arrive (any status), or rejects with the TtsError of a
 * transport failure, a timeout or the caller's abort.
 */
export async function openExchange(
  settings: ExchangeSettings,
  method: 'GET' | 'POST',
  path: string,
  body: string | undefined,
  operation: Operation,
  attempt: number,
  callerSignal: AbortSignal | undefined,
): Promise<Exchange> {
  const { baseUrl, apiKey, dispatcher, timeouts, log, redact } = settings;
  const url = `${baseUrl}${path}`;
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
    controller.abort(new TtsAbortedError(`The TTS request was aborted while ${operation}.`, { requestSent }));
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
      ...(body === undefined ? {} : { body: encoder.encode(body) }),
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
export async function readBody(ex: Exchange, limit: number): Promise<{ text: string; truncated: boolean }> {
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

/**
 * Pipes the response body into a stream of its own, so an idle stall or an abort errors it even unread. With a
 * `judge`, a body that ends cleanly but not whole ends that stream in the judge's error instead (told, never
 * cached), judged in the same data handler: no stream between the socket and the reader but this one.
 */
export function streamAudio(ex: Exchange, judge?: CompletenessJudge): Readable {
  /** The judge's verdict at the body's clean end: the audio ends in it after every byte was passed on. */
  let cut: Error | undefined;
  const audio = new PassThrough({
    highWaterMark: AUDIO_BUFFER_BYTES,
    flush: (callback) => callback(cut ?? null),
  });
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
    judge?.write(chunk);
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
    cut = judge?.end();
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
