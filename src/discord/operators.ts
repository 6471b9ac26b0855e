import type { Client } from 'discord.js';
import type { Logger } from '../log.ts';

/** The application's owner as Discord reports it: a user, or a team with members. */
export interface ApplicationOwner {
  readonly owner: { readonly id: string; readonly members?: { keys(): Iterable<string> } } | null;
}

/** How long the application's owners are trusted before asking Discord again. */
const OWNERS_TTL_MS = 10 * 60_000;

/**
 * Who operates Herald: the configured `BOT_OWNER_IDS`, or, when none are configured, the application's owner (or
 * every member of the team that owns it) as Discord reports it, so a default install is never left with nobody
 * able to resume a stopped budget.
 */
export function createOperatorCheck(
  configured: readonly string[],
  fetchApplication: () => Promise<ApplicationOwner>,
  logger: Logger,
): (userId: string) => Promise<boolean> {
  if (configured.length > 0) {
    const ids = new Set(configured);
    return async (userId) => ids.has(userId);
  }
  let cached: { ids: Set<string>; at: number } | undefined;
  return async (userId) => {
    if (cached === undefined || Date.now() - cached.at > OWNERS_TTL_MS) {
      try {
        const { owner } = await fetchApplication();
        // A team-owned application reports the team (whose id is not a user's) with its members.
        const ids = new Set(owner?.members ? [...owner.members.keys()] : owner ? [owner.id] : []);
        cached = { ids, at: Date.now() };
      } catch (error) {
        logger.warn('could not read the application owner from Discord', { err: error });
        return cached?.ids.has(userId) ?? false;
      }
    }
    return cached.ids.has(userId);
  };
}

/** {@link createOperatorCheck} asking the client's application (which rejects until the client has logged in). */
export function operatorsOf(
  client: Pick<Client, 'application'>,
  configured: readonly string[],
  logger: Logger,
): (userId: string) => Promise<boolean> {
  return createOperatorCheck(
    configured,
    () => client.application?.fetch() ?? Promise.reject(new Error('not logged in yet')),
    logger,
  );
}
