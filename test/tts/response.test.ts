import { describe, expect, it } from 'vitest';
import {
  describeErrorBody,
  errorFromResponse,
  parseAudioHeaders,
  type ResponseHeaders,
  requestIdOf,
  retryAfterMs,
} from '../../src/tts/response.ts';

const NOW = Date.parse('2025-01-01T00:00:00Z');

describe('parseAudioHeaders', () => {
  it.each<[string, ResponseHeaders, ReturnType<typeof parseAudioHeaders>]>([
    [
      'well-formed',
      {
        'x-sample-rate': '24000',
        'x-audio-duration': '1.25',
        'x-cost-usd': '0.0012',
        'x-balance-usd': '9.5',
      },
      { sampleRate: 24_000, durationS: 1.25, costUsd: 0.0012, balanceUsd: 9.5 },
    ],
    [
      'all absent',
      {},
      { sampleRate: undefined, durationS: undefined, costUsd: undefined, balanceUsd: undefined },
    ],
    [
      'malformed',
      { 'x-sample-rate': 'abc', 'x-audio-duration': '1,5', 'x-cost-usd': 'NaN', 'x-balance-usd': 'Infinity' },
      { sampleRate: undefined, durationS: undefined, costUsd: undefined, balanceUsd: undefined },
    ],
    [
      'half-numbers Number() would accept',
      { 'x-sample-rate': '0x5DC0', 'x-audio-duration': '', 'x-cost-usd': '  ', 'x-balance-usd': '1e' },
      { sampleRate: undefined, durationS: undefined, costUsd: undefined, balanceUsd: undefined },
    ],
    [
      'out of range',
      { 'x-sample-rate': '24000.5', 'x-audio-duration': '-1', 'x-cost-usd': '-0.01', 'x-balance-usd': '-2' },
      { sampleRate: undefined, durationS: undefined, costUsd: undefined, balanceUsd: -2 },
    ],
    [
      'padded, exponent, repeated',
      {
        'x-sample-rate': ['48000', '8000'],
        'x-audio-duration': ' 2 ',
        'x-cost-usd': '1e-4',
        'x-balance-usd': '0',
      },
      { sampleRate: 48_000, durationS: 2, costUsd: 0.0001, balanceUsd: 0 },
    ],
  ])('%s', (_name, headers, expected) => {
    const parsed = parseAudioHeaders(headers);
    expect(parsed).toStrictEqual(expected);
    for (const value of Object.values(parsed)) expect(Number.isNaN(value)).toBe(false);
  });
});

describe('retryAfterMs', () => {
  it.each<[ResponseHeaders, number | undefined]>([
    [{}, undefined],
    [{ 'retry-after': '2' }, 2_000],
    [{ 'retry-after': '0.5' }, 500],
    [{ 'retry-after': '0' }, 0],
    [{ 'retry-after': '-1' }, undefined],
    [{ 'retry-after': 'soon' }, undefined],
    [{ 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT' }, 30_000],
    [{ 'retry-after': 'Tue, 31 Dec 2024 23:00:00 GMT' }, 0],
    [{ 'retry-after-ms': '250', 'retry-after': '9' }, 250],
  ])('%j → %s', (headers, expected) => {
    expect(retryAfterMs(headers, NOW)).toBe(expected);
  });
});

describe('requestIdOf', () => {
  it.each<[ResponseHeaders, string | undefined]>([
    [{}, undefined],
    [{ 'x-request-id': 'req_1' }, 'req_1'],
    [{ 'request-id': 'req_2' }, 'req_2'],
    [{ 'x-request-id': '  ' }, undefined],
    [{ 'x-request-id': 'a\u0000b' }, 'ab'],
  ])('%j → %s', (headers, expected) => {
    expect(requestIdOf(headers)).toBe(expected);
  });
});

describe('describeErrorBody', () => {
  it.each<[string, string, string, string | undefined, string | undefined]>([
    ['empty', '', '', undefined, undefined],
    ['whitespace', '  \n', 'text/plain', undefined, undefined],
    ['plain text', 'Bad things\nhappened', 'text/plain', 'Bad things happened', undefined],
    ['a JSON string', '"over quota"', 'application/json', 'over quota', undefined],
    ['{ message }', '{"message":"nope"}', 'application/json', 'nope', undefined],
    [
      'nested error with param',
      '{"error":{"code":"invalid_parameter","message":"bad speaker","param":"speaker_id"}}',
      'application/json',
      'bad speaker',
      'speaker_id',
    ],
    ['{ error: string }', '{"error":"denied"}', 'application/json', 'denied', undefined],
    [
      'FastAPI detail list',
      '{"detail":[{"loc":["body","temperature"],"msg":"too hot"}]}',
      'application/json',
      'too hot',
      'temperature',
    ],
    ['problem details title', '{"title":"Gone","status":410}', 'application/problem+json', 'Gone', undefined],
    ['JSON without any message', '{"ok":false}', 'application/json', undefined, undefined],
    [
      'truncated JSON read as text',
      '{"error":{"message":"Upstr',
      'application/json',
      '{"error":{"message":"Upstr',
      undefined,
    ],
    [
      'an HTML error page',
      '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Oops</h1></body></html>',
      'text/html',
      '502 Bad Gateway',
      undefined,
    ],
    [
      'HTML without title',
      '<html><body><p>Service &amp; more</p></body></html>',
      '',
      'Service & more',
      undefined,
    ],
  ])('%s', (_name, body, contentType, message, field) => {
    expect(describeErrorBody(body, contentType)).toMatchObject({ message, field });
  });

  it('truncates a long body to one short line', () => {
    const { message } = describeErrorBody('x'.repeat(5_000), 'text/plain');
    expect(Array.from(message ?? '').length).toBe(201);
    expect(message?.endsWith('…')).toBe(true);
  });
});

describe('errorFromResponse', () => {
  const failed = (
    status: number,
    body = '',
    headers: ResponseHeaders = {},
    operation = 'generating speech',
  ) =>
    errorFromResponse({
      status,
      headers: { 'x-request-id': 'req_9', ...headers },
      bodyText: body,
      operation,
      redact: (text) => text.split('SECRET').join('[redacted]'),
      now: NOW,
    });

  it.each<[number, string, string]>([
    [400, '', 'TTS_INVALID_REQUEST'],
    [413, '', 'TTS_INVALID_REQUEST'],
    [422, '{"error":{"message":"bad","param":"text"}}', 'TTS_INVALID_REQUEST'],
    [401, '', 'TTS_AUTHENTICATION'],
    [403, 'Forbidden', 'TTS_AUTHENTICATION'],
    [402, '', 'TTS_INSUFFICIENT_BALANCE'],
    [403, 'Your credit is exhausted', 'TTS_INSUFFICIENT_BALANCE'],
    [400, '{"message":"insufficient balance"}', 'TTS_INSUFFICIENT_BALANCE'],
    [400, '{"error":{"code":"insufficient_balance","message":"Nope"}}', 'TTS_INSUFFICIENT_BALANCE'],
    [400, 'Out of credits', 'TTS_INSUFFICIENT_BALANCE'],
    // A rate limit is never a stop, whatever it says; "quota" alone says nothing about the balance.
    [429, 'Monthly quota exceeded', 'TTS_RATE_LIMITED'],
    [429, '{"message":"rate limit quota exceeded, insufficient balance of requests"}', 'TTS_RATE_LIMITED'],
    [403, 'API quota exceeded for this key', 'TTS_AUTHENTICATION'],
    [400, '{"message":"balance field is not allowed"}', 'TTS_INVALID_REQUEST'],
    [404, '{"error":{"code":"speaker_not_found","message":"No such speaker"}}', 'TTS_UNKNOWN_SPEAKER'],
    [404, '', 'TTS_UNKNOWN_SPEAKER'],
    [404, '{"error":{"code":"not_found","message":"No route for /v1/x"}}', 'TTS_SERVICE'],
    [429, '', 'TTS_RATE_LIMITED'],
    [500, '<html><title>Oops</title></html>', 'TTS_SERVICE'],
    [503, '', 'TTS_SERVICE'],
    [405, '', 'TTS_SERVICE'],
  ])('%i %j → %s', (status, body, code) => {
    const error = failed(status, body);
    expect(error.code).toBe(code);
    expect(error.status).toBe(status);
    expect(error.requestId).toBe('req_9');
    expect(error.message).toContain(`HTTP ${status}`);
  });

  it('reports a 404 while listing speakers as a path problem, not an unknown speaker', () => {
    const error = failed(404, '', {}, 'listing speakers');
    expect(error.code).toBe('TTS_SERVICE');
    expect(error.message).toContain('TTS_BASE_URL');
  });

  it('carries the field of a refused request, retry-after and balance', () => {
    expect(failed(422, '{"error":{"message":"bad","param":"text"}}')).toMatchObject({
      local: false,
      field: 'text',
    });
    expect(failed(429, '', { 'retry-after': '3' })).toMatchObject({ retryAfterMs: 3_000 });
    expect(failed(429, '', { 'retry-after': '3' }).message).toContain('retry after 3 s');
    expect(failed(402, '{"error":{"balance_usd":0.25}}')).toMatchObject({ balanceUsd: 0.25 });
    expect(failed(402, '', { 'x-balance-usd': '0.5' })).toMatchObject({ balanceUsd: 0.5 });
  });

  it('redacts secrets quoted from the body', () => {
    const error = failed(401, '{"message":"key SECRET is revoked"}');
    expect(error.message).not.toContain('SECRET');
    expect(error.message).toContain('key [redacted] is revoked');
  });
});
