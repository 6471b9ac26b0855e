/**
 * What the emulator makes of an incoming request: its body and headers read, and a generate body checked, in the
 * interface's order, into an accepted job or an {@link ErrorReply}.
 */
import type { IncomingMessage } from 'node:http';
import { fromMicros } from './money.ts';
import type { EmulatedSpeaker } from './speakers.ts';
import type { Settings } from './types.ts';

/** Longest accepted text in code points (the spec's 30,000 characters). */
export const MAX_TEXT_CODE_POINTS = 30_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_BODY_BYTES = 1_048_576;

/** An expected refusal returned as a value (validation is not exceptional), rendered as `{"error": body}`. */
export class ErrorReply {
  readonly status: number;
  readonly body: { code: string; message: string; [extra: string]: unknown };
  constructor(status: number, code: string, message: string, extra: Record<string, unknown> = {}) {
    this.status = status;
    this.body = { code, message, ...extra };
  }
}

/** A request body as read: its text and what it parses to. */
export interface RawBody {
  text: string;
  /** The JSON value, the raw text when it is not JSON, undefined when empty. */
  parsed: unknown;
  json: boolean;
}

/** Reads the whole body, keeping at most the first MiB of it. */
export async function readBody(req: IncomingMessage): Promise<RawBody> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return { text, parsed: undefined, json: false };
  try {
    return { text, parsed: JSON.parse(text) as unknown, json: true };
  } catch {
    return { text, parsed: text, json: false };
  }
}

/** The request's headers as one string each (repeated ones joined with ', '). */
export function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** A generation the service agreed to do, and what it costs. */
export interface Accepted {
  text: string;
  speaker: EmulatedSpeaker;
  costMicros: number;
}

/** Checks a generate body against `settings` and the balance; the first failing check is the reply. */
export function validateGenerate(
  raw: RawBody,
  settings: Settings,
  balanceMicros: number,
): Accepted | ErrorReply {
  const invalid = (param: string, message: string): ErrorReply =>
    new ErrorReply(422, 'invalid_parameter', message, { param });
  if (!raw.json) return new ErrorReply(400, 'invalid_json', 'Request body must be valid JSON');
  const body = raw.parsed;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return new ErrorReply(422, 'invalid_parameter', 'Request body must be a JSON object', { param: 'body' });
  }
  const fields = body as Record<string, unknown>;
  const text = fields.text;
  if (typeof text !== 'string') return invalid('text', 'text is required and must be a string');
  if (text.trim() === '') return invalid('text', 'text must not be empty');
  const codePoints = [...text].length;
  if (codePoints > MAX_TEXT_CODE_POINTS) {
    return new ErrorReply(
      413,
      'text_too_long',
      `text is ${codePoints} characters; the maximum is ${MAX_TEXT_CODE_POINTS}`,
      {
        max_characters: MAX_TEXT_CODE_POINTS,
      },
    );
  }
  const speakerId = fields.speaker_id;
  if (typeof speakerId !== 'string' || !UUID.test(speakerId)) {
    return invalid('speaker_id', 'speaker_id must be a UUID');
  }
  const speaker = settings.speakers.find((s) => s.id.toLowerCase() === speakerId.toLowerCase());
  if (speaker === undefined)
    return new ErrorReply(404, 'speaker_not_found', `Speaker ${speakerId} not found`);
  if (fields.language !== undefined && fields.language !== 'en') {
    return invalid('language', 'Only language "en" is supported');
  }
  const format = settings.form === 'current' ? 'opus' : 'wav';
  if (fields.format !== undefined && fields.format !== format) {
    return invalid('format', `Only format "${format}" is supported`);
  }
  const temperature = fields.temperature;
  if (temperature !== undefined) {
    if (settings.form === 'variant') return invalid('temperature', 'temperature is not supported');
    if (typeof temperature !== 'number' || !(temperature >= 0.5 && temperature <= 2)) {
      return invalid('temperature', 'temperature must be a number from 0.5 to 2.0');
    }
  }
  const costMicros = Math.round(codePoints * settings.pricePerCharUsd * 1e6);
  if (costMicros > balanceMicros) {
    const balance = fromMicros(balanceMicros);
    return new ErrorReply(
      402,
      'insufficient_balance',
      `Insufficient balance: this request costs $${fromMicros(costMicros)}, the balance is $${balance}`,
      { balance_usd: balance },
    );
  }
  return { text, speaker, costMicros };
}
