import { collectBounded } from '../audio/collect.ts';
import type { Speaker } from '../tts/index.ts';
import type { SpeechRequest, Synthesize } from '../voice/session.ts';

/** The fixed sentence a preview says; fixed so that it is paid once per voice and temperature, then cached. */
export function previewSentence(speaker: Speaker): string {
  return `Hello, I am ${speaker.name}. This is how I sound.`;
}

const PREVIEW_KEY_PREFIX = 'preview:';

/** A preview utterance of `speaker` at `temperature` for `requestedBy`. */
export function previewRequest(
  speaker: Speaker,
  temperature: number | undefined,
  requestedBy: SpeechRequest['requestedBy'],
  onFailure: (error: unknown) => void,
): SpeechRequest {
  return {
    text: previewSentence(speaker),
    speaker,
    ...(temperature === undefined ? {} : { temperature }),
    requestedBy,
    key: `${PREVIEW_KEY_PREFIX}${speaker.id}`,
    onFailure,
  };
}

/** True for a preview: a fixed sentence, not a member's speech, so it is cached whatever the server chose. */
export function isPreview(request: SpeechRequest): boolean {
  return request.key?.startsWith(PREVIEW_KEY_PREFIX) ?? false;
}

/** A preview as a file, for a member who is not in voice. */
export interface PreviewFile {
  readonly name: string;
  readonly audio: Buffer;
}

/** Preview audio this long is not a preview: a stream that does not end stops here. */
const MAX_PREVIEW_BYTES = 4 * 1024 * 1024;

/** Synthesises a preview (through the cache and the guard like any utterance) into a file to attach. */
export async function renderPreviewFile(
  synthesize: Synthesize,
  request: SpeechRequest,
  guildId: string,
): Promise<PreviewFile> {
  const result = await synthesize(request, new AbortController().signal, guildId);
  const audio = await collectBounded(
    result.audio,
    MAX_PREVIEW_BYTES,
    'The preview audio is unexpectedly long.',
  );
  const slug = request.speaker.name.replace(/[^\w-]+/g, '-').toLowerCase() || 'voice';
  return { name: `preview-${slug}.${result.format === 'wav' ? 'wav' : 'ogg'}`, audio };
}
