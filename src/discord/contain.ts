import type { Logger } from '../log.ts';

/**
 * Wraps a discord.js event handler so that whatever it throws stays with the server it was about: logged with the
 * event and the server, never rethrown. discord.js calls handlers inside its WebSocket message handler, where an
 * exception would otherwise end the process and silence every server at once.
 */
export function contained<A extends unknown[]>(
  logger: Logger,
  event: string,
  guildOf: (...args: A) => string | null | undefined,
  handler: (...args: A) => unknown,
): (...args: A) => void {
  const fail = (args: A, error: unknown): void => {
    let guild: string | null | undefined;
    try {
      guild = guildOf(...args);
    } catch {
      guild = undefined;
    }
    logger.error('an event handler failed; other servers are unaffected', { event, guild, err: error });
  };
  return (...args) => {
    try {
      const result = handler(...args);
      if (result instanceof Promise) result.catch((error: unknown) => fail(args, error));
    } catch (error) {
      fail(args, error);
    }
  };
}
