import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY, retryDelay } from '../../src/tts/index.ts';

describe('retryDelay', () => {
  const policy = DEFAULT_RETRY_POLICY;
  it.each<[string, number, number | undefined, number, number | undefined]>([
    ['first retry, no jitter', 0, undefined, 0, 500],
    ['second retry doubles', 1, undefined, 0, 1_000],
    ['jitter takes off at most a quarter', 1, undefined, 0.999_999, 750],
    ['no third retry by default', 2, undefined, 0, undefined],
    ['Retry-After wins', 0, 3_000, 0.5, 3_000],
    ['Retry-After 0 retries at once', 0, 0, 0.5, 0],
    ['Retry-After of exactly 60 s is honoured', 0, 60_000, 0.5, 60_000],
    ['Retry-After over 60 s gives up', 0, 60_001, 0.5, undefined],
  ])('%s', (_name, retry, retryAfter, random, expected) => {
    expect(retryDelay(retry, retryAfter, policy, () => random)).toBe(expected);
  });

  it('caps the backoff', () => {
    const many = { ...policy, maxRetries: 10 };
    expect(retryDelay(9, undefined, many, () => 0)).toBe(policy.maxDelayMs);
  });
});
