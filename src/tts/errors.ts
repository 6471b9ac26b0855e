/** Context every TTS error may carry. */
export interface TtsErrorContext {
  /** HTTP status of the answer that caused the error. */
  readonly status?: number | undefined;
  /** The service's request id, when it sent one. */
  readonly requestId?: string | undefined;
  /** The underlying error (a socket or parser error); never holds request headers. */
  readonly cause?: unknown;
}

/** Base of every error the TTS client throws; programs switch on `code`, `message` is for operators. */
export class TtsError extends Error {
  /** Stable machine-readable code, e.g. `TTS_RATE_LIMITED`. */
  readonly code: string;
  /** HTTP status, when the service answered. */
  readonly status?: number;
  /** The service's request id, when it sent one. */
  readonly requestId?: string;

  constructor(code: string, message: string, context: TtsErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.name = new.target.name;
    this.code = code;
    if (context.status !== undefined) this.status = context.status;
    if (context.requestId !== undefined) this.requestId = context.requestId;
  }
}

/** The request was invalid: refused locally before sending (`local`), or by the service (400/413/422). */
export class TtsInvalidRequestError extends TtsError {
  /** True when refused before anything was sent (so nothing was billed). */
  readonly local: boolean;
  /** The offending request field (`text`, `speakerId`, ...), when known. */
  readonly field: string | undefined;

  constructor(message: string, options: TtsErrorContext & { local: boolean; field?: string | undefined }) {
    super('TTS_INVALID_REQUEST', message, options);
    this.local = options.local;
    this.field = options.field;
  }
}

/** The API key was refused (401/403). */
export class TtsAuthenticationError extends TtsError {
  constructor(message: string, context: TtsErrorContext = {}) {
    super('TTS_AUTHENTICATION', message, context);
  }
}

/** The account cannot pay for the request (402, or a 4xx other than 429 that clearly says the balance is insufficient). */
export class TtsInsufficientBalanceError extends TtsError {
  /** The balance the service reported, when it did. */
  readonly balanceUsd: number | undefined;

  constructor(message: string, options: TtsErrorContext & { balanceUsd?: number | undefined } = {}) {
    super('TTS_INSUFFICIENT_BALANCE', message, options);
    this.balanceUsd = options.balanceUsd;
  }
}

/** The speaker id is not known to the service (404). */
export class TtsUnknownSpeakerError extends TtsError {
  constructor(message: string, context: TtsErrorContext = {}) {
    super('TTS_UNKNOWN_SPEAKER', message, context);
  }
}

/** Too many requests (429); `retryAfterMs` is the service's `Retry-After`, when sent. */
export class TtsRateLimitedError extends TtsError {
  /** How long the service asked to wait, when it said. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options: TtsErrorContext & { retryAfterMs?: number | undefined } = {}) {
    super('TTS_RATE_LIMITED', message, options);
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The service failed (5xx) or answered with a status the client has no meaning for. */
export class TtsServiceError extends TtsError {
  constructor(message: string, context: TtsErrorContext = {}) {
    super('TTS_SERVICE', message, context);
  }
}

/** Which wait ran out: reaching a connected socket, the response headers, or the next body chunk. */
export type TtsTimeoutPhase = 'connect' | 'first-byte' | 'idle';

/** A timeout ran out; `phase` says which. */
export class TtsTimeoutError extends TtsError {
  /** The phase that timed out. */
  readonly phase: TtsTimeoutPhase;

  constructor(phase: TtsTimeoutPhase, message: string, context: TtsErrorContext = {}) {
    super('TTS_TIMEOUT', message, context);
    this.phase = phase;
  }
}

/** The connection failed (refused, reset, DNS); `requestSent` says whether the service may have seen the request. */
export class TtsConnectionError extends TtsError {
  /** False when the request never reached a connected socket, so the service cannot have charged. */
  readonly requestSent: boolean;

  constructor(message: string, options: TtsErrorContext & { requestSent: boolean }) {
    super('TTS_CONNECTION', message, options);
    this.requestSent = options.requestSent;
  }
}

/** The caller's abort signal fired. */
export class TtsAbortedError extends TtsError {
  /** True when the request had reached the service before the abort (it may have been charged). */
  readonly requestSent: boolean;

  constructor(
    message = 'The TTS request was aborted.',
    context: TtsErrorContext & { requestSent?: boolean } = {},
  ) {
    super('TTS_ABORTED', message, context);
    this.requestSent = context.requestSent ?? false;
  }
}

/**
 * Whether a failed generation may still have been charged: the request reached the service and no answer came
 * back (aborted, timed out or cut off while waiting for the headers). An answer, even an error, says it was not
 * (the service charges only what it accepts); a request that never reached a connected socket cannot have been.
 */
export function mayHaveCharged(error: unknown): boolean {
  if (!(error instanceof TtsError) || error.status !== undefined) return false;
  if (error instanceof TtsConnectionError || error instanceof TtsAbortedError) return error.requestSent;
  if (error instanceof TtsTimeoutError) return error.phase !== 'connect';
  return false;
}

/** The service answered something the contract does not allow (content type, malformed JSON, wrong shape). */
export class TtsProtocolError extends TtsError {
  constructor(message: string, context: TtsErrorContext = {}) {
    super('TTS_PROTOCOL', message, context);
  }
}
