/** Stable codes of {@link AudioFormatError}; programs switch on these, people read the message. */
export type AudioErrorCode =
  | 'ERR_NOT_OGG'
  | 'ERR_NOT_OPUS'
  | 'ERR_OGG_CRC'
  | 'ERR_OGG_CORRUPT'
  | 'ERR_TRUNCATED'
  | 'ERR_BAD_OPUS_PACKET'
  | 'ERR_UNSUPPORTED_OPUS'
  | 'ERR_OPUS_CODEC'
  | 'ERR_NOT_WAV'
  | 'ERR_UNSUPPORTED_WAV'
  | 'ERR_UNKNOWN_FORMAT';

/** Audio from the TTS service that Herald cannot play: wrong container, corrupt, truncated or unsupported. */
export class AudioFormatError extends Error {
  /** What went wrong, as a stable string. */
  readonly code: AudioErrorCode;

  constructor(code: AudioErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'AudioFormatError';
    this.code = code;
  }
}

/** Shows the first bytes of a buffer as text when printable and hex otherwise, for error messages. */
export function describeBytes(bytes: Buffer): string {
  const printable = bytes.every((byte) => byte >= 0x20 && byte < 0x7f);
  return printable ? JSON.stringify(bytes.toString('latin1')) : `0x${bytes.toString('hex')}`;
}
