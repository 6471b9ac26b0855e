import emojiData from 'unicode-emoji-json/data-by-emoji.json' with { type: 'json' };

/** What happens to Unicode emoji: spoken as their CLDR name, or dropped. */
export type EmojiMode = 'name' | 'drop';

// Presentation selectors and skin tones do not change what an emoji is; the data lists only the
// fully-qualified, untoned form, so both are removed before looking a sequence up.
const PRESENTATION_AND_TONE = /[\uFE0E\uFE0F\u{1F3FB}-\u{1F3FF}]/gu;

function lookupKey(sequence: string): string {
  return sequence.replace(PRESENTATION_AND_TONE, '');
}

// Built once at load and never changed: CLDR names keyed by the sequence without selectors or tones.
const NAMES: ReadonlyMap<string, string> = new Map(
  Object.entries(emojiData).map(([emoji, info]) => [lookupKey(emoji), info.name]),
);

// Keycaps, flags, tag flags (England, Scotland, Wales), then pictographs with their selectors, tones and
// ZWJ joins, so a whole family or "woman technologist" is one match. A bare "❤" without its emoji selector
// counts too; stray regional indicators and skin tones are matched so they are never spoken as letters.
const EMOJI =
  /[#*0-9]\uFE0F?\u20E3|\p{Regional_Indicator}{1,2}|\u{1F3F4}[\u{E0020}-\u{E007E}]+\u{E007F}|\p{Extended_Pictographic}[\uFE0E\uFE0F]?[\u{1F3FB}-\u{1F3FF}]?(?:\u200D\p{Extended_Pictographic}[\uFE0E\uFE0F]?[\u{1F3FB}-\u{1F3FF}]?)*|[\u{1F3FB}-\u{1F3FF}]/gu;

/** The CLDR name of one emoji sequence ("👍🏽" → "thumbs up"); a ZWJ sequence the data lacks is named by its first part; undefined when unknown. */
export function nameEmoji(sequence: string): string | undefined {
  const exact = NAMES.get(lookupKey(sequence));
  if (exact !== undefined) return exact;
  const [first] = sequence.split('\u200D');
  return first === undefined || first === sequence ? undefined : NAMES.get(lookupKey(first));
}

/** Replaces every emoji in `text` by its name between spaces (mode 'name') or by a space; unknown pictographs always become a space. */
export function speakEmoji(text: string, mode: EmojiMode): string {
  return text.replace(EMOJI, (sequence) => {
    const name = mode === 'name' ? nameEmoji(sequence) : undefined;
    return name === undefined ? ' ' : ` ${name} `;
  });
}
