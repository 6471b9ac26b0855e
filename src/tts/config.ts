import type { ApiForm, TtsConfig } from './types.ts';

/** The API key's shape: a service prefix ending in `live_`, then the secret (at least 16 safe characters). */
const API_KEY = /^[A-Za-z0-9_-]*live_[A-Za-z0-9_\-.~+/=]{16,}$/;

const FORMS: readonly ApiForm[] = ['current', 'variant'];

/** Parses TTS_BASE_URL, TTS_API_KEY, TTS_API_FORM (default current) from an env object; problems name the variable and never echo the key. */
export function parseTtsConfig(
  env: Readonly<Record<string, string | undefined>>,
): { ok: true; value: TtsConfig } | { ok: false; problems: string[] } {
  const problems: string[] = [];

  const rawUrl = env.TTS_BASE_URL?.trim() ?? '';
  const baseUrl = rawUrl === '' ? undefined : normaliseBaseUrl(rawUrl);
  if (rawUrl === '')
    problems.push(
      'TTS_BASE_URL is missing: the TTS service address including its version path, e.g. https://host/v1.',
    );
  else if (typeof baseUrl !== 'string') problems.push(`TTS_BASE_URL ${baseUrl?.problem ?? 'is invalid'}.`);

  // The key is checked but never quoted, not even in part: a message may end up in a shared log.
  const apiKey = env.TTS_API_KEY?.trim() ?? '';
  if (apiKey === '') problems.push('TTS_API_KEY is missing: the API key from the TTS service dashboard.');
  else if (apiKey !== env.TTS_API_KEY) problems.push('TTS_API_KEY has leading or trailing whitespace.');
  else if (!apiKey.includes('live_'))
    problems.push(
      'TTS_API_KEY does not look like a TTS API key: it must start with the service prefix ending in "live_".',
    );
  else if (!API_KEY.test(apiKey))
    problems.push(
      'TTS_API_KEY is malformed: after the prefix ending in "live_" it must hold the secret (16 or more letters, digits or -_.~+/=).',
    );

  const rawForm = env.TTS_API_FORM?.trim() ?? '';
  const form = rawForm === '' ? 'current' : FORMS.find((candidate) => candidate === rawForm.toLowerCase());
  if (form === undefined)
    problems.push(
      `TTS_API_FORM must be "current" or "variant" (got ${JSON.stringify(rawForm.slice(0, 40))}).`,
    );

  if (problems.length > 0 || typeof baseUrl !== 'string' || form === undefined)
    return { ok: false, problems };
  return { ok: true, value: { baseUrl, apiKey, form } };
}

function normaliseBaseUrl(raw: string): string | { problem: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: 'is not an absolute URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { problem: 'must use http or https' };
  if (url.username !== '' || url.password !== '') return { problem: 'must not carry credentials' };
  if (url.search !== '' || url.hash !== '') return { problem: 'must not carry a query or fragment' };
  // Request URLs are built by appending to the path, so every segment of a gateway prefix is kept.
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
