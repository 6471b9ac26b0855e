import { setTimeout as delay } from 'node:timers/promises';
import { Agent, type Dispatcher } from 'undici';
import { silentLogger } from '../log.ts';
import { judgeCompleteness } from './complete.ts';
import {
  TtsAbortedError,
  TtsConnectionError,
  TtsError,
  TtsProtocolError,
  TtsRateLimitedError,
  TtsServiceError,
  TtsTimeoutError,
} from './errors.ts';
import {
  type Exchange,
  type ExchangeSettings,
  type Operation,
  openExchange,
  readBody,
  streamAudio,
} from './exchange.ts';
import {
  errorFromResponse,
  headerValue,
  MAX_ERROR_BODY_BYTES,
  parseAudioHeaders,
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

  const settings: ExchangeSettings = { baseUrl: trimmedBase, apiKey, dispatcher, timeouts, log, redact };

  let cache: { speakers: readonly Speaker[]; fetchedAt: number } | undefined;
  let inFlight: Promise<readonly Speaker[]> | undefined;

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
        const ex = await openExchange(
          settings,
          'GET',
          path,
          undefined,
          'listing speakers',
          attempt,
          listOptions.signal,
        );
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
        const ex = await openExchange(settings, 'POST', path, body, 'generating speech', attempt, signal);
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
    const headers = parseAudioHeaders(ex.headers);
    return {
      // A body that ends cleanly but short of a whole clip fails as a cut one does: told, and never cached.
      audio: streamAudio(
        ex,
        judgeCompleteness({ format: FORMAT_OF_FORM[form], durationS: headers.durationS }),
      ),
      contentType,
      format: FORMAT_OF_FORM[form],
      ...headers,
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
