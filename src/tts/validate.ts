import { TtsInvalidRequestError } from './errors.ts';
import type { ApiForm, AudioFormat, GenerateRequest } from './types.ts';

/** The service's limit on `text`, in Unicode code points (see {@link countCharacters}). */
export const MAX_TEXT_CHARACTERS = 30_000;

/** Lowest accepted `temperature` (inclusive). */
export const MIN_TEMPERATURE = 0.5;

/** Highest accepted `temperature` (inclusive). */
export const MAX_TEMPERATURE = 2.0;

/** The only language the service speaks. */
export const SUPPORTED_LANGUAGE = 'en';

/** The one audio format each contract form allows. */
export const FORMAT_OF_FORM: Readonly<Record<ApiForm, AudioFormat>> = { current: 'opus', variant: 'wav' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Characters as the service counts them for limits and billing: Unicode code points.
 * An emoji such as 😀 is one character (two UTF-16 units); a flag 🇫🇷 is two.
 */
export function countCharacters(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** True when `value` is a UUID in its canonical 8-4-4-4-12 hex form (any version). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** The checks made before sending, so an invalid request costs nothing; undefined when `request` is valid. */
export function validateGenerateRequest(
  request: GenerateRequest,
  form: ApiForm,
): TtsInvalidRequestError | undefined {
  const refuse = (field: string, message: string) =>
    new TtsInvalidRequestError(message, { local: true, field });
  if (typeof request.text !== 'string' || request.text.trim() === '')
    return refuse('text', 'The text to speak is empty.');
  const length = countCharacters(request.text);
  if (length > MAX_TEXT_CHARACTERS)
    return refuse(
      'text',
      `The text is ${length} characters long; the service accepts at most ${MAX_TEXT_CHARACTERS}.`,
    );
  if (typeof request.speakerId !== 'string' || !isUuid(request.speakerId))
    return refuse('speakerId', 'The speaker id is not a UUID.');
  if (request.language !== undefined && request.language !== SUPPORTED_LANGUAGE)
    return refuse(
      'language',
      `The service speaks only "${SUPPORTED_LANGUAGE}"; the language asked for is not supported.`,
    );
  const { temperature } = request;
  if (
    temperature !== undefined &&
    (typeof temperature !== 'number' ||
      !Number.isFinite(temperature) ||
      temperature < MIN_TEMPERATURE ||
      temperature > MAX_TEMPERATURE)
  )
    return refuse(
      'temperature',
      `The temperature must be between ${MIN_TEMPERATURE} and ${MAX_TEMPERATURE}.`,
    );
  const allowed = FORMAT_OF_FORM[form];
  if (request.format !== undefined && request.format !== allowed)
    return refuse(
      'format',
      `The ${form} form of the service produces only ${allowed} audio, not ${request.format}.`,
    );
  return undefined;
}

/** The JSON body of `POST /speech/generate` for a validated request in the given form. */
export function generateBody(request: GenerateRequest, form: ApiForm): Record<string, unknown> {
  return {
    text: request.text,
    speaker_id: request.speakerId,
    ...(request.language === undefined ? {} : { language: request.language }),
    format: FORMAT_OF_FORM[form],
    // The variant form has no temperature parameter at all; sending one could be refused.
    ...(form === 'current' && request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}
