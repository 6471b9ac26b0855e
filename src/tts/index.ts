// The TTS service client: configuration, validation, errors and the HTTP client. Import from here.
export { createTtsClient, DEFAULT_SPEAKERS_TTL_MS, DEFAULT_TIMEOUTS } from './client.ts';
export { parseTtsConfig } from './config.ts';
export {
  mayHaveCharged,
  TtsAbortedError,
  TtsAuthenticationError,
  TtsConnectionError,
  TtsError,
  type TtsErrorContext,
  TtsInsufficientBalanceError,
  TtsInvalidRequestError,
  TtsProtocolError,
  TtsRateLimitedError,
  TtsServiceError,
  TtsTimeoutError,
  type TtsTimeoutPhase,
  TtsUnknownSpeakerError,
} from './errors.ts';
export { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelay } from './retry.ts';
export type {
  ApiForm,
  AudioFormat,
  GenerateRequest,
  GenerateResult,
  Speaker,
  TtsClient,
  TtsClientOptions,
  TtsConfig,
  TtsRetryOptions,
  TtsTimeouts,
} from './types.ts';
export {
  countCharacters,
  FORMAT_OF_FORM,
  isUuid,
  MAX_TEMPERATURE,
  MAX_TEXT_CHARACTERS,
  MIN_TEMPERATURE,
  SUPPORTED_LANGUAGE,
  validateGenerateRequest,
} from './validate.ts';
