/** A file attached to a message, as Discord reports it. */
export interface AttachmentInfo {
  readonly name: string;
  readonly contentType: string | null;
}

type AttachmentKind = 'image' | 'video' | 'audio' | 'voice' | 'file';

// Singular and plural wording per kind, in the order they are spoken.
const WORDING: Readonly<Record<AttachmentKind, readonly [string, string]>> = {
  image: ['an image', 'images'],
  video: ['a video', 'videos'],
  audio: ['an audio file', 'audio files'],
  voice: ['a voice message', 'voice messages'],
  file: ['a file', 'files'],
};

// Used only when Discord gives no content type (it does not for every upload).
const EXTENSIONS: Readonly<Record<string, AttachmentKind>> = {
  png: 'image',
  jpg: 'image',
  jpeg: 'image',
  gif: 'image',
  webp: 'image',
  avif: 'image',
  bmp: 'image',
  heic: 'image',
  svg: 'image',
  mp4: 'video',
  webm: 'video',
  mov: 'video',
  mkv: 'video',
  m4v: 'video',
  avi: 'video',
  mp3: 'audio',
  ogg: 'audio',
  oga: 'audio',
  opus: 'audio',
  wav: 'audio',
  flac: 'audio',
  m4a: 'audio',
  aac: 'audio',
};

function kindOf(attachment: AttachmentInfo): AttachmentKind {
  // Discord names every voice message this way; they are audio/ogg like any other clip.
  if (attachment.name === 'voice-message.ogg') return 'voice';
  const family = /^(image|video|audio)\//i.exec(attachment.contentType ?? '')?.[1]?.toLowerCase();
  if (family === 'image' || family === 'video' || family === 'audio') return family;
  if (attachment.contentType !== null && attachment.contentType !== '') return 'file';
  const extension = /\.([a-z0-9]{1,5})$/i.exec(attachment.name)?.[1]?.toLowerCase() ?? '';
  return EXTENSIONS[extension] ?? 'file';
}

/** "a, b and c". */
export function listInWords(items: readonly string[]): string {
  if (items.length <= 1) return items[0] ?? '';
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1) ?? ''}`;
}

/** Describes attachments and stickers ("2 images, a file and a sticker: wave"); '' when there are none. `stickerNames` are already speakable ('' for a sticker with no usable name). */
export function describeExtras(
  attachments: readonly AttachmentInfo[],
  stickerNames: readonly string[],
): string {
  const counts = new Map<AttachmentKind, number>();
  for (const attachment of attachments) {
    const kind = kindOf(attachment);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  const items: string[] = [];
  for (const [kind, [one, many]] of Object.entries(WORDING) as [
    AttachmentKind,
    readonly [string, string],
  ][]) {
    const count = counts.get(kind) ?? 0;
    if (count > 0) items.push(count === 1 ? one : `${count} ${many}`);
  }
  for (const name of stickerNames) items.push(name === '' ? 'a sticker' : `a sticker: ${name}`);
  return listInWords(items);
}
