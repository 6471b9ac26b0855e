import {
  TtsAuthenticationError,
  type TtsError,
  TtsInsufficientBalanceError,
  TtsInvalidRequestError,
  TtsRateLimitedError,
  TtsServiceError,
  TtsUnknownSpeakerError,
} from './errors.ts';

/** Response headers as undici gives them: lower-cased names, repeated headers as arrays. */
export type ResponseHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** The most of an error body the client reads; the rest is discarded unread. */
export const MAX_ERROR_BODY_BYTES = 4096;

/** Longest detail quoted from an error body in a message. */
const MAX_DETAIL_CHARACTERS = 200;

// A plain decimal number; rejects '', '0x10', 'Infinity', '1e', '1,5' which Number() would half-accept.
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** The first value of a header, trimmed; undefined when absent or empty. */
export function headerValue(headers: ResponseHeaders, name: string): string | undefined {
  const raw = headers[name.toLowerCase()];
  const first = Array.isArray(raw) ? raw[0] : raw;
  const trimmed = first?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/** A decimal header value, or undefined when absent, malformed or out of `[min, ∞)`; never NaN. */
export function numberHeader(headers: ResponseHeaders, name: string, min = -Infinity): number | undefined {
  const raw = headerValue(headers, name);
  if (raw === undefined || !DECIMAL.test(raw)) return undefined;
  const value = Number(raw);
  return Number.isFinite(value) && value >= min ? value : undefined;
}

/** The metadata headers of a successful generation, each undefined when absent or malformed. */
export function parseAudioHeaders(headers: ResponseHeaders): {
  sampleRate: number | undefined;
  durationS: number | undefined;
  costUsd: number | undefined;
  balanceUsd: number | undefined;
} {
  const rate = numberHeader(headers, 'x-sample-rate', 1);
  return {
    // A sample rate is a whole number of hertz; anything else is a malformed header.
    sampleRate: rate !== undefined && Number.isInteger(rate) ? rate : undefined,
    durationS: numberHeader(headers, 'x-audio-duration', 0),
    costUsd: numberHeader(headers, 'x-cost-usd', 0),
    // A balance may legitimately be negative (an overdraft), so no lower bound.
    balanceUsd: numberHeader(headers, 'x-balance-usd'),
  };
}

/** The service's request id from `X-Request-Id` (or `Request-Id`), when sent. */
export function requestIdOf(headers: ResponseHeaders): string | undefined {
  const id = headerValue(headers, 'x-request-id') ?? headerValue(headers, 'request-id');
  // An id is quoted in logs and messages; keep it short and printable.
  return id === undefined ? undefined : id.replace(/[^\x20-\x7e]/g, '').slice(0, 128) || undefined;
}

/** `Retry-After` (seconds or HTTP date) or `Retry-After-Ms` in milliseconds; undefined when absent or malformed. */
export function retryAfterMs(headers: ResponseHeaders, now: number = Date.now()): number | undefined {
  const ms = numberHeader(headers, 'retry-after-ms', 0);
  if (ms !== undefined) return ms;
  const raw = headerValue(headers, 'retry-after');
  if (raw === undefined) return undefined;
  if (DECIMAL.test(raw)) {
    const seconds = Number(raw);
    return Number.isFinite(seconds) && seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  }
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** What an error body says, reduced to one line. */
export interface ErrorBodyDetail {
  /** A readable sentence drawn from the body; undefined for an empty or unreadable body. */
  readonly message: string | undefined;
  /** The request field the body blames, when it names one. */
  readonly field: string | undefined;
  /** A balance the body states (`balance_usd` or `balance`), when it does. */
  readonly balanceUsd?: number | undefined;
}

/** Extracts a readable message from any error body: JSON object or string, plain text, HTML or nothing. */
export function describeErrorBody(text: string, contentType = ''): ErrorBodyDetail {
  const trimmed = text.trim();
  if (trimmed === '') return { message: undefined, field: undefined };
  const json = parseJson(trimmed);
  if (json.ok) {
    const found = fromJson(json.value);
    return {
      message: found.message === undefined ? undefined : oneLine(found.message),
      field: found.field,
      balanceUsd: balanceIn(json.value),
    };
  }
  if (/html/i.test(contentType) || /^<(?:!doctype|html|head|body|\?xml)/i.test(trimmed)) {
    const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(trimmed)?.[1];
    const heading = /<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(trimmed)?.[1];
    const stripped = (title ?? heading ?? trimmed)
      .replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ')
      .replace(/<[^>]*>?/g, ' ');
    const message = oneLine(decodeEntities(stripped));
    return { message: message === '' ? undefined : message, field: undefined };
  }
  return { message: oneLine(trimmed), field: undefined };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (!/^[[{"]/.test(text)) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function fromJson(value: unknown): { message: string | undefined; field: string | undefined } {
  if (typeof value === 'string') return { message: value, field: undefined };
  if (Array.isArray(value))
    return value.length > 0 ? fromJson(value[0]) : { message: undefined, field: undefined };
  if (typeof value !== 'object' || value === null) return { message: undefined, field: undefined };
  const record = value as Record<string, unknown>;
  let field = stringOf(record.field) ?? stringOf(record.param);
  // Common shapes: { message }, { error: "…" }, { error: { message } }, { detail: "…" }, FastAPI's
  // { detail: [{ loc, msg }] }, { errors: [...] }, { title } (RFC 9457 problem details).
  for (const key of ['message', 'error', 'detail', 'error_description', 'errors', 'title', 'msg']) {
    const candidate = record[key];
    if (typeof candidate === 'string' && candidate.trim() !== '') return { message: candidate, field };
    if (typeof candidate === 'object' && candidate !== null) {
      const inner = fromJson(candidate);
      field ??= inner.field ?? locField(Array.isArray(candidate) ? candidate[0] : candidate);
      if (inner.message !== undefined) return { message: inner.message, field };
    }
  }
  return { message: undefined, field };
}

function balanceIn(value: unknown, depth = 0): number | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || depth > 2) return undefined;
  const record = value as Record<string, unknown>;
  for (const key of ['balance_usd', 'balance']) {
    const candidate = record[key];
    if (typeof candidate === 'number' && Number.isFinite(candidate)) return candidate;
  }
  return balanceIn(record.error, depth + 1);
}

function locField(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const loc = (value as { loc?: unknown }).loc;
  if (!Array.isArray(loc)) return undefined;
  const last: unknown = loc[loc.length - 1];
  return typeof last === 'string' ? last : undefined;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

function oneLine(text: string): string {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  const points = Array.from(collapsed);
  return points.length <= MAX_DETAIL_CHARACTERS
    ? collapsed
    : `${points.slice(0, MAX_DETAIL_CHARACTERS).join('')}…`;
}

/**
 * A 4xx other than 402 stops spending only when it clearly says the account cannot pay: "insufficient balance",
 * "out of credit", "balance too low", `insufficient_funds`. A word like "quota" alone does not: a 429 "rate limit
 * quota" is a rate limit, and stopping every server for good on it would be far worse than one refused request.
 */
const INSUFFICIENT_BALANCE =
  /\binsufficient[\s_-]+(?:balance|funds|credits?)\b|\bout[\s_-]+of[\s_-]+(?:credits?|funds|balance)\b|\b(?:balance|credits?)[\s_-]+(?:is[\s_-]+)?(?:too[\s_-]+low|exhausted|insufficient|depleted)\b|\bnot[\s_-]+enough[\s_-]+(?:balance|credits?|funds)\b/i;

/** Everything known about a non-2xx answer, for {@link errorFromResponse}. */
export interface FailedResponse {
  readonly status: number;
  readonly headers: ResponseHeaders;
  /** At most {@link MAX_ERROR_BODY_BYTES} of the body, decoded as UTF-8. */
  readonly bodyText: string;
  /** What the client was doing, for the message: e.g. `listing speakers`. */
  readonly operation: string;
  /** Removes secrets from text quoted from the body. */
  readonly redact: (text: string) => string;
  /** Clock for an HTTP-date `Retry-After`. */
  readonly now?: number;
}

/** Maps a non-2xx answer to the one error class that describes it. */
export function errorFromResponse(response: FailedResponse): TtsError {
  const { status, headers } = response;
  const requestId = requestIdOf(headers);
  const contentType = headerValue(headers, 'content-type') ?? '';
  const detail = describeErrorBody(response.bodyText, contentType);
  const said = detail.message === undefined ? '' : `: ${response.redact(detail.message)}`;
  const context = { status, requestId };
  const where = `while ${response.operation} (HTTP ${status}${requestId === undefined ? '' : `, request ${requestId}`})`;

  const saysInsufficient = INSUFFICIENT_BALANCE.test(`${detail.message ?? ''} ${response.bodyText}`);
  if (status === 402 || (status >= 400 && status < 500 && status !== 429 && saysInsufficient)) {
    return new TtsInsufficientBalanceError(`The TTS account cannot pay for this ${where}${said}`, {
      ...context,
      balanceUsd: numberHeader(headers, 'x-balance-usd') ?? detail.balanceUsd,
    });
  }
  switch (status) {
    case 400:
    case 413:
    case 422:
      return new TtsInvalidRequestError(`The TTS service refused the request ${where}${said}`, {
        ...context,
        local: false,
        field: detail.field,
      });
    case 401:
    case 403:
      return new TtsAuthenticationError(`The TTS service rejected the API key ${where}${said}`, context);
    case 404:
      // A 404 that is not about a speaker means the path is wrong (a base URL missing a segment): the
      // operator's problem, not the speaker's.
      if (response.operation === 'generating speech' && /speaker|voice/i.test(detail.message ?? 'speaker'))
        return new TtsUnknownSpeakerError(
          `The TTS service does not know that speaker ${where}${said}`,
          context,
        );
      return new TtsServiceError(
        `The TTS service has no such endpoint ${where}${said}; check that TTS_BASE_URL holds the full base path`,
        context,
      );
    case 429: {
      const wait = retryAfterMs(headers, response.now);
      const advice = wait === undefined ? '' : ` (retry after ${Math.ceil(wait / 1000)} s)`;
      return new TtsRateLimitedError(`The TTS service is rate limiting requests ${where}${said}${advice}`, {
        ...context,
        retryAfterMs: wait,
      });
    }
    default:
      return new TtsServiceError(
        status >= 500
          ? `The TTS service failed ${where}${said}`
          : `The TTS service gave an unexpected answer ${where}${said}`,
        context,
      );
  }
}
