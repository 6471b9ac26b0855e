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

/**
 * The first `count` bytes of `bytes`, in a buffer of their own, to describe later. A view would keep alive all that
 * `bytes` is a view of; `Buffer.alloc` (unlike `allocUnsafe`) takes no slab of Node's shared pool either.
 */
export function copyStart(bytes: Uint8Array, count: number): Buffer {
  const start = Buffer.alloc(Math.min(count, bytes.length));
  start.set(bytes.subarray(0, start.length));
  return start;
}

/** Shows bytes for an error message: printable ASCII as is, anything else as `\xHH`, all in quotes. */
export function describeBytes(bytes: Buffer): string {
  let text = '';
  for (const byte of bytes) {
    text +=
      byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c
        ? String.fromCharCode(byte)
        : `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return `"${text}"`;
}
