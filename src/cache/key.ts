import { createHmac } from 'node:crypto';
import type { ApiForm } from '../tts/index.ts';

/** Everything that decides what the service would return; two requests with equal parts get equal audio. */
export interface CacheKeyParts {
  /** The final text sent to the service, after normalisation and the pronunciation dictionary. */
  readonly text: string;
  readonly speakerId: string;
  /** Undefined means the service's default (1.0); the variant form has no temperature at all. */
  readonly temperature: number | undefined;
  readonly form: ApiForm;
  /** The service base URL: another service (or gateway) may speak differently. */
  readonly baseUrl: string;
}

/** The service's default temperature, so "unset" and "1.0" share an entry. */
const DEFAULT_TEMPERATURE = 1;

/**
 * The entry name: HMAC-SHA256 with the installation's secret over an unambiguous encoding of the parts, as hex.
 * Without the secret a name says nothing about the text, not even whether a guessed sentence is cached.
 */
export function cacheKey(secret: Buffer, parts: CacheKeyParts): string {
  const temperature = parts.form === 'variant' ? null : (parts.temperature ?? DEFAULT_TEMPERATURE);
  // JSON of an array: no separator inside a field can be confused with the boundary between fields.
  const encoded = JSON.stringify([1, parts.baseUrl, parts.form, parts.speakerId, temperature, parts.text]);
  return createHmac('sha256', secret).update(encoded, 'utf8').digest('hex');
}
