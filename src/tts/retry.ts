/** The resolved retry policy. */
export interface RetryPolicy {
  readonly maxRetries: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxRetryAfterMs: number;
}

/** Defaults: 2 retries, 0.5 s doubling to at most 8 s, a Retry-After honoured up to 60 s. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 2,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
};

/**
 * How long to wait before retry number `retry` (0 for the first retry), or undefined to give up.
 * A service-given `Retry-After` wins when it is within `maxRetryAfterMs`; a longer one means giving up rather
 * than hammering early. Otherwise exponential backoff with up to 25% jitter, so clients do not retry in step.
 */
export function retryDelay(
  retry: number,
  retryAfterMs: number | undefined,
  policy: RetryPolicy,
  random: () => number,
): number | undefined {
  if (retry >= policy.maxRetries) return undefined;
  if (retryAfterMs !== undefined) return retryAfterMs <= policy.maxRetryAfterMs ? retryAfterMs : undefined;
  const backoff = Math.min(policy.baseDelayMs * 2 ** retry, policy.maxDelayMs);
  return Math.round(backoff * (1 - 0.25 * random()));
}
