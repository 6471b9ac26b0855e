import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Logger } from '../log.ts';
import type { TtsInvalidRequestError } from './errors.ts';

/** Which statement of the generate contract the service speaks: `current` (opus, temperature) or `variant` (wav). */
export type ApiForm = 'current' | 'variant';

/** Audio formats of the two forms; each form allows exactly one. */
export type AudioFormat = 'opus' | 'wav';

/** A voice the service offers, as listed by `GET /speech/speakers` (camel-cased, validated). */
export interface Speaker {
  /** UUID; the `speaker_id` of a generation. */
  readonly id: string;
  /** Display name. */
  readonly name: string;
  /** The service's internal key; sometimes equal to the id, sometimes a short label. */
  readonly voiceKey: string;
  /** Free text as the service sends it; null when unknown. */
  readonly gender: string | null;
  /** Languages the speaker supports; null means all languages. */
  readonly languages: readonly string[] | null;
}

/** Where and how to reach the service; parsed once from the environment by `parseTtsConfig`. */
export interface TtsConfig {
  /** Absolute base URL including its version path (e.g. `https://host/gateway/tts/v1`), without trailing slash. */
  readonly baseUrl: string;
  /** The secret sent as `X-API-Key`; never logged. */
  readonly apiKey: string;
  /** The contract form the service speaks. */
  readonly form: ApiForm;
}

/** Timeouts of one HTTP exchange, in milliseconds. */
export interface TtsTimeouts {
  /** Until the request is on a connected socket. Default 5 000. */
  readonly connectMs?: number;
  /** From the request being sent until the response headers arrive. Default 20 000. */
  readonly firstByteMs?: number;
  /** Longest gap between body chunks while the client is waiting for data. Default 10 000. */
  readonly idleMs?: number;
}

/** Retry policy knobs; see `createTtsClient` for which failures are retried. */
export interface TtsRetryOptions {
  /** Retries after the first attempt. Default 2. */
  readonly maxRetries?: number;
  /** First backoff delay; doubles per retry. Default 500. */
  readonly baseDelayMs?: number;
  /** Cap of the exponential backoff. Default 8 000. */
  readonly maxDelayMs?: number;
  /** A longer `Retry-After` than this is not waited for: the error is thrown instead. Default 60 000. */
  readonly maxRetryAfterMs?: number;
}

/** Options of `createTtsClient`: the configuration plus transport, policy and test seams. */
export interface TtsClientOptions extends TtsConfig {
  /** HTTP transport; a keep-alive `Agent` owned (and closed) by the client when absent. An injected one is not closed. */
  readonly dispatcher?: Dispatcher;
  /** Receives method, path, status, request id, attempt and milliseconds; never headers. */
  readonly logger?: Logger;
  /** Per-phase timeouts. */
  readonly timeouts?: TtsTimeouts;
  /** Retry policy. */
  readonly retry?: TtsRetryOptions;
  /** How long `speakers()` reuses a listing. Default 5 minutes. */
  readonly speakersTtlMs?: number;
  /** Jitter source in [0, 1); `Math.random` by default. */
  readonly random?: () => number;
  /** Backoff sleep; rejects when `signal` aborts. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Clock for the speakers cache, in milliseconds. `Date.now` by default. */
  readonly now?: () => number;
}

/** One speech generation to request. */
export interface GenerateRequest {
  /** Text to speak: non-empty after trimming, at most 30 000 code points. Sent as given. */
  text: string;
  /** A speaker's UUID. */
  speakerId: string;
  /** Only `en` is supported; omitted means the service default (`en`). */
  language?: string;
  /** 0.5–2.0. Sent in the current form only; the variant form has no temperature and it is dropped. */
  temperature?: number;
  /** Must equal the configured form's format when given (`opus` current, `wav` variant). */
  format?: AudioFormat;
  /** Cancels the request, the backoff sleep, or the audio stream. */
  signal?: AbortSignal;
}

/** A generation whose headers have arrived; the audio is still streaming. */
export interface GenerateResult {
  /** The body, streamed; errors with TtsTimeoutError on an idle stall, TtsAbortedError on abort. */
  readonly audio: Readable;
  /** The response's content type (lower-cased, may carry parameters); empty when the service sent none. */
  readonly contentType: string;
  /** The audio format, from the content type or the configured form. */
  readonly format: AudioFormat;
  /** `X-Sample-Rate`; undefined when absent or malformed. */
  readonly sampleRate: number | undefined;
  /** `X-Audio-Duration` in seconds; undefined when absent or malformed. */
  readonly durationS: number | undefined;
  /** `X-Cost-USD`; undefined when absent or malformed. */
  readonly costUsd: number | undefined;
  /** `X-Balance-USD` after this generation; undefined when absent or malformed. */
  readonly balanceUsd: number | undefined;
  /** The service's request id (`X-Request-Id`), when sent. */
  readonly requestId: string | undefined;
  /** HTTP attempts made, 1 when no retry was needed. */
  readonly attempts: number;
}

/** The typed client of the TTS service. */
export interface TtsClient {
  /** Fetches the speakers now (no cache), with retries. @throws TtsError */
  listSpeakers(options?: { signal?: AbortSignal }): Promise<Speaker[]>;
  /** The cached listing: refreshed after the TTL or on `refresh`; concurrent callers share one request. @throws TtsError */
  speakers(options?: { refresh?: boolean }): Promise<readonly Speaker[]>;
  /** Requests speech; resolves when the response headers arrive. @throws TtsError */
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /** Local validation only, the same checks generate makes before sending; undefined when valid. */
  validate(request: GenerateRequest): TtsInvalidRequestError | undefined;
  /** Closes the client's own connection pool (not an injected dispatcher). */
  close(): Promise<void>;
}
