/** The speakers the emulator serves: the default catalogue, generated ones for paging, and their wire form. */

/** A speaker the emulator serves; `toneHz` is the pitch of the tone it "speaks" with. */
export interface EmulatedSpeaker {
  id: string;
  name: string;
  voiceKey: string;
  gender: string | null;
  languages: string[] | null;
  toneHz: number;
}

/** At least six speakers: UUID ids, one with gender null, language_restrictions null and ["en"], voice_key equal to the id for some and short labels ("af_bella") for others; tones distinct and at least 100 Hz apart (e.g. 220, 330, 440, 550, 660, 880). */
export const DEFAULT_SPEAKERS: readonly EmulatedSpeaker[] = Object.freeze(
  (
    [
      {
        id: '0b5a6d4e-3f1c-4a8e-9d2b-7c1e5f3a9b01',
        name: 'Bella',
        voiceKey: 'af_bella',
        gender: 'female',
        languages: null,
        toneHz: 220,
      },
      {
        id: '1c6b7e5f-4a2d-4b9f-8e3c-8d2f6a4b0c12',
        name: 'Adam',
        voiceKey: 'am_adam',
        gender: 'male',
        languages: ['en'],
        toneHz: 330,
      },
      {
        id: '2d7c8f6a-5b3e-4cab-9f4d-9e3a7b5c1d23',
        name: 'Nova',
        voiceKey: '2d7c8f6a-5b3e-4cab-9f4d-9e3a7b5c1d23',
        gender: null,
        languages: null,
        toneHz: 440,
      },
      {
        id: '3e8d9a7b-6c4f-4dbc-8a5e-af4b8c6d2e34',
        name: 'Emma',
        voiceKey: 'bf_emma',
        gender: 'female',
        languages: ['en'],
        toneHz: 550,
      },
      {
        id: '4f9eab8c-7d5a-4ecd-9b6f-b05c9d7e3f45',
        name: 'George',
        voiceKey: '4f9eab8c-7d5a-4ecd-9b6f-b05c9d7e3f45',
        gender: 'male',
        languages: ['en', 'fr'],
        toneHz: 660,
      },
      {
        id: '5a0fbc9d-8e6b-4fde-8c7a-c16d0e8f4a56',
        name: 'Sky',
        voiceKey: 'af_sky',
        gender: null,
        languages: ['en'],
        toneHz: 880,
      },
    ] satisfies EmulatedSpeaker[]
  ).map((speaker) => Object.freeze(speaker)),
);

/** `n` speakers with distinct names, UUIDs and tones (200 Hz + 10 Hz steps), for paging tests. */
export function manySpeakers(n: number): EmulatedSpeaker[] {
  return Array.from({ length: n }, (_, i) => {
    const id = `00000000-0000-4000-8000-${(i + 1).toString(16).padStart(12, '0')}`;
    return {
      id,
      name: `Speaker ${String(i + 1).padStart(4, '0')}`,
      voiceKey: i % 2 === 0 ? id : `sp_${i + 1}`,
      gender: i % 3 === 0 ? null : i % 3 === 1 ? 'female' : 'male',
      languages: i % 2 === 0 ? null : ['en'],
      toneHz: 200 + 10 * i,
    };
  });
}

/** A speaker as `GET /speech/speakers` lists it (snake_case fields, per the interface). */
export function toWireSpeaker(s: EmulatedSpeaker): Record<string, unknown> {
  return {
    id: s.id,
    name: s.name,
    voice_key: s.voiceKey,
    gender: s.gender,
    language_restrictions: s.languages,
  };
}

/** The body of a speakers response under the 'malformed-json' fault, by its variant. */
export function malformedSpeakers(
  variant: 'not-json' | 'wrong-shape' | 'bad-items',
  speakers: EmulatedSpeaker[],
): string {
  switch (variant) {
    case 'not-json':
      return '<html><body>502 Bad Gateway</body></html>';
    case 'wrong-shape':
      return JSON.stringify({ speakers: speakers.map(toWireSpeaker) });
    case 'bad-items':
      return JSON.stringify(speakers.map((s) => ({ name: s.name, gender: 7 })));
  }
}
