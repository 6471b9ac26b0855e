import type { SettingsStore } from '../storage/index.ts';
import type { Speaker, TtsClient } from '../tts/index.ts';

/** Discord shows at most 25 autocomplete choices. */
export const MAX_AUTOCOMPLETE_CHOICES = 25;

/** Where the speaker that speaks came from, in order of precedence. */
export type SpeakerSource = 'option' | 'member' | 'server' | 'config' | 'first';

/** The candidates for one utterance, most specific first; any may be absent. */
export interface SpeakerChoices {
  /** What the member typed in the command's `speaker` option: an id or a name. */
  readonly option?: string | undefined;
  /** The member's own voice in this server (an id). */
  readonly member?: string | null | undefined;
  /** The server default (an id). */
  readonly server?: string | null | undefined;
  /** `TTS_DEFAULT_SPEAKER`: an id or a name. */
  readonly config?: string | undefined;
}

/** Outcome of {@link chooseSpeaker}. A stored choice the service no longer lists falls through. */
export type SpeakerChoice =
  | { readonly kind: 'chosen'; readonly speaker: Speaker; readonly source: SpeakerSource }
  | { readonly kind: 'unknown-option'; readonly option: string }
  | { readonly kind: 'no-speakers' };

/** Finds a speaker by id, or by name ignoring case. */
export function findSpeaker(speakers: readonly Speaker[], idOrName: string): Speaker | undefined {
  const wanted = idOrName.trim();
  const lower = wanted.toLowerCase();
  return (
    speakers.find((speaker) => speaker.id === wanted) ??
    speakers.find((speaker) => speaker.name.toLowerCase() === lower)
  );
}

/**
 * Picks who speaks: the `speaker` option, then the member's voice, the server default, `TTS_DEFAULT_SPEAKER`,
 * and finally the first speaker the service lists. An option that matches nothing is an error, not a fall-through:
 * the member asked for something specific.
 */
export function chooseSpeaker(speakers: readonly Speaker[], choices: SpeakerChoices): SpeakerChoice {
  if (choices.option !== undefined && choices.option.trim() !== '') {
    const speaker = findSpeaker(speakers, choices.option);
    return speaker
      ? { kind: 'chosen', speaker, source: 'option' }
      : { kind: 'unknown-option', option: choices.option };
  }
  const candidates: [SpeakerSource, string | null | undefined][] = [
    ['member', choices.member],
    ['server', choices.server],
    ['config', choices.config],
  ];
  for (const [source, idOrName] of candidates) {
    if (!idOrName) continue;
    const speaker = findSpeaker(speakers, idOrName);
    if (speaker) return { kind: 'chosen', speaker, source };
  }
  const first = speakers[0];
  return first ? { kind: 'chosen', speaker: first, source: 'first' } : { kind: 'no-speakers' };
}

/** Speakers for autocomplete: names starting with the query first, then names or ids containing it; 25 at most. */
export function rankSpeakers(speakers: readonly Speaker[], query: string): Speaker[] {
  const q = query.trim().toLowerCase();
  if (q === '') return speakers.slice(0, MAX_AUTOCOMPLETE_CHOICES);
  const prefix = speakers.filter((speaker) => speaker.name.toLowerCase().startsWith(q));
  const substring = speakers.filter(
    (speaker) =>
      !speaker.name.toLowerCase().startsWith(q) &&
      (speaker.name.toLowerCase().includes(q) || speaker.id.toLowerCase().startsWith(q)),
  );
  return [...prefix, ...substring].slice(0, MAX_AUTOCOMPLETE_CHOICES);
}

/** A speaker's languages as members read them: "all" when unrestricted. */
export function describeLanguages(speaker: Speaker): string {
  return speaker.languages === null ? 'all' : speaker.languages.join(', ') || 'none listed';
}

/** Where {@link resolveSpeaker} reads the candidates from. */
export interface SpeakerSources {
  readonly tts: Pick<TtsClient, 'speakers'>;
  readonly settings: Pick<SettingsStore, 'guild' | 'memberSpeaker'>;
  /** `TTS_DEFAULT_SPEAKER`: an id or name. */
  readonly defaultSpeaker: string | undefined;
}

/** Reads the speaker list and the stored choices for a member in a server, then {@link chooseSpeaker}. */
export async function resolveSpeaker(
  sources: SpeakerSources,
  guildId: string,
  userId: string,
  option?: string,
): Promise<SpeakerChoice> {
  const [speakers, member, server] = await Promise.all([
    sources.tts.speakers(),
    sources.settings.memberSpeaker(guildId, userId),
    sources.settings.guild(guildId),
  ]);
  return chooseSpeaker(speakers, {
    option,
    member,
    server: server.defaultSpeakerId,
    config: sources.defaultSpeaker,
  });
}
