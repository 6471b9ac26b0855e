import type { ApiForm } from '../tts/index.ts';
import type { Synthesize } from '../voice/session.ts';
import type { MemberStore } from './store.ts';

/** The temperature a member speaks with: their own, else the server's, else undefined (the service's default). */
export async function resolveTemperature(
  store: Pick<MemberStore, 'memberTemperature' | 'guildTemperature'>,
  guildId: string,
  userId: string,
): Promise<number | undefined> {
  const [mine, server] = await Promise.all([
    store.memberTemperature(guildId, userId),
    store.guildTemperature(guildId),
  ]);
  return mine ?? server ?? undefined;
}

/**
 * Wraps a synthesis so each utterance carries its member's temperature (unless the request set one). The variant
 * form of the service has no temperature, so there nothing is added.
 */
export function tunedSynthesize(
  inner: Synthesize,
  options: {
    readonly store: Pick<MemberStore, 'memberTemperature' | 'guildTemperature'>;
    readonly form: ApiForm;
  },
): Synthesize {
  if (options.form === 'variant') return inner;
  return async (request, signal, guildId) => {
    if (request.temperature !== undefined) return inner(request, signal, guildId);
    const temperature = await resolveTemperature(options.store, guildId, request.requestedBy.id);
    return inner(temperature === undefined ? request : { ...request, temperature }, signal, guildId);
  };
}
