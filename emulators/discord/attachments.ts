/**
 * Attachments as Discord takes them from a bot: multipart `files[n]` parts whose metadata is `attachments[n]` of
 * `payload_json` (matched by `id`), and the rules of voice messages (flag IS_VOICE_MESSAGE, 1 << 13). The error
 * codes are discord-api-types' RESTJSONErrorCodes (50159-50161, 50173); the statuses are as Discord answers its
 * other form and permission errors (400, 403), which its documentation does not state for these codes.
 */
import { PermissionFlagsBits } from 'discord.js';
import { messageLimitRefusal } from './limits.ts';
import { apiError, type RestResponse } from './rest.ts';

/** A file the bot uploaded, with the attachment metadata it sent for it. */
export interface StoredFile {
  readonly filename: string;
  readonly size: number;
  /** The attachment's `content_type`: by the file name's extension as Discord gives it, else the part's label. */
  readonly contentType: string;
  readonly data: Buffer;
  /** `attachments[n].duration_secs`, for voice messages. */
  readonly durationSecs: number | undefined;
  /** `attachments[n].waveform`: base64 of up to 256 amplitude bytes, for voice messages. */
  readonly waveform: string | undefined;
}

/** The voice-message flag of a message (MessageFlags.IsVoiceMessage). */
export const IS_VOICE_MESSAGE = 1 << 13;
/** Discord's clients (and so Discord) keep a waveform to at most this many points. */
const MAX_WAVEFORM_BYTES = 256;

interface UploadedPart {
  readonly field: string;
  readonly filename: string;
  readonly size: number;
  readonly contentType: string;
  readonly data: Buffer;
}

/**
 * The files of a message body (parsed by rest.ts: `files` lists the multipart parts), each joined to its
 * `attachments[n]` metadata; or Discord's 400 when a part's field is not `files[n]` or metadata names no part.
 */
export function uploadedFiles(body: Record<string, unknown>): StoredFile[] | RestResponse {
  const parts = (Array.isArray(body.files) ? body.files : []) as UploadedPart[];
  const metadata = (Array.isArray(body.attachments) ? body.attachments : []) as Record<string, unknown>[];
  const files: StoredFile[] = [];
  for (const part of parts) {
    const index = /^files\[(\d+)\]$/.exec(part.field)?.[1];
    if (index === undefined) return invalidForm(`${part.field} is not a files[n] field`);
    const meta = metadata.find((m) => String(m.id) === index);
    files.push({
      filename: typeof meta?.filename === 'string' ? meta.filename : part.filename,
      size: part.size,
      contentType: contentTypeOf(part),
      data: part.data,
      durationSecs: typeof meta?.duration_secs === 'number' ? meta.duration_secs : undefined,
      waveform: typeof meta?.waveform === 'string' ? meta.waveform : undefined,
    });
  }
  // New attachments must each have their part (existing ones, kept on an edit, carry no number id here).
  for (const meta of metadata) {
    const id = String(meta.id);
    if (/^\d+$/.test(id) && Number(id) < 1000 && !parts.some((part) => part.field === `files[${id}]`)) {
      return invalidForm(`attachments[${id}] names no uploaded file`);
    }
  }
  return files;
}

/**
 * Discord's refusal of a voice message that breaks its rules, or undefined for a message that keeps them (or is
 * not a voice message). `permissions`: the sender's in the channel (the app's, for an interaction's messages).
 */
export function voiceMessageRefusal(
  body: Record<string, unknown>,
  files: readonly StoredFile[],
  permissions: bigint,
): RestResponse | undefined {
  const flags = typeof body.flags === 'number' ? body.flags : 0;
  if ((flags & IS_VOICE_MESSAGE) === 0) return undefined;
  if ((permissions & PermissionFlagsBits.SendVoiceMessages) === 0n) {
    return apiError(403, 50173, 'You cannot send voice messages in this channel');
  }
  const text = typeof body.content === 'string' ? body.content : '';
  const extras = ['embeds', 'components', 'sticker_ids', 'poll'].some(
    (key) => Array.isArray(body[key]) && (body[key] as unknown[]).length > 0,
  );
  if (text !== '' || extras || body.poll !== undefined) {
    return apiError(400, 50159, 'Voice messages do not support additional content');
  }
  const [file] = files;
  if (files.length !== 1 || !file || !file.contentType.startsWith('audio/')) {
    return apiError(400, 50160, 'Voice messages must have a single audio attachment');
  }
  if (file.durationSecs === undefined || file.waveform === undefined) {
    return apiError(400, 50161, 'Voice messages must have supporting metadata');
  }
  // Not sure Discord checks these beyond their types; the emulator does, to keep the bot honest.
  const waveform = Buffer.from(file.waveform, 'base64');
  if (
    !(file.durationSecs > 0) ||
    waveform.length === 0 ||
    waveform.length > MAX_WAVEFORM_BYTES ||
    waveform.toString('base64') !== file.waveform
  ) {
    return invalidForm('duration_secs must be positive and waveform base64 of 1 to 256 bytes');
  }
  return undefined;
}

/** Attachments as a message payload shows them (what the bot reads back, and GET returns). */
export function attachmentPayloads(
  messageId: string,
  files: readonly StoredFile[],
): Record<string, unknown>[] {
  return files.map((file, i) => ({
    id: `${messageId}${i}`,
    filename: file.filename,
    size: file.size,
    content_type: file.contentType,
    url: `https://cdn.invalid/${file.filename}`,
    proxy_url: `https://cdn.invalid/${file.filename}`,
    ...(file.durationSecs === undefined ? {} : { duration_secs: file.durationSecs }),
    ...(file.waveform === undefined ? {} : { waveform: file.waveform }),
  }));
}

// Discord names an attachment's type by its file name; the part's own label is a client's guess (discord.js
// sniffs Ogg as `application/ogg` whatever it holds), and voice messages sent that way are accepted as audio.
const TYPES_BY_EXTENSION: Readonly<Record<string, string>> = {
  ogg: 'audio/ogg',
  opus: 'audio/ogg',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  png: 'image/png',
  jpg: 'image/jpeg',
  txt: 'text/plain',
};

function contentTypeOf(part: UploadedPart): string {
  const extension = /\.([a-z0-9]+)$/i.exec(part.filename)?.[1]?.toLowerCase() ?? '';
  return (
    TYPES_BY_EXTENSION[extension] ?? (part.contentType.split(';')[0]?.trim() || 'application/octet-stream')
  );
}

function invalidForm(why: string): RestResponse {
  return { status: 400, body: { message: 'Invalid Form Body', code: 50035, errors: { _errors: [why] } } };
}

/**
 * Discord's refusal of a message body: over one of its limits (see limits.ts), or its uploads (files not matching their metadata, a voice message breaking its
 * rules), or undefined when it may be posted. `permissions`: the sender's in the channel.
 */
export function uploadRefusal(body: Record<string, unknown>, permissions: bigint): RestResponse | undefined {
  // Discord's length and count limits first (a message of 2,001 characters is refused whatever it carries).
  const overLimit = messageLimitRefusal(body);
  if (overLimit) return overLimit;
  const files = uploadedFiles(body);
  if (!Array.isArray(files)) return files;
  return voiceMessageRefusal(body, files, permissions);
}
