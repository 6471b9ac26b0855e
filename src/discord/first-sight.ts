/**
 * Gateway events handled once. A resumed session replays what Discord sent after the sequence the client names in
 * its RESUME, and discord.js can name one older than an event it has already handled (a resumable invalid session
 * read while that event was still being processed: both await, and the RESUME is built from the session as it was
 * before the event's sequence was stored). The event then arrives twice, and a `/speak` handled twice is paid for
 * and spoken twice. Ids are remembered for `ttlMs`: 15 minutes by default, as long as an
 * interaction can be answered at all.
 */

const DEFAULT_TTL_MS = 15 * 60_000;
/** Ids kept at the most, whatever their age: a bound on memory under a flood. */
const MAX_IDS = 200_000;

/**
 * Wraps `handle` so that an event whose `idOf` was seen within `ttlMs` goes to `onRepeat` instead.
 */
export function firstSightOnly<T>(
  idOf: (event: T) => string,
  handle: (event: T) => Promise<void> | void,
  onRepeat: (event: T) => void,
  options: { readonly ttlMs?: number; readonly now?: () => number } = {},
): (event: T) => Promise<void> | void {
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
  const now = options.now ?? Date.now;
  // Insertion order is arrival order, so the oldest are first: expired ones are dropped from the front.
  const seen = new Map<string, number>();
  return (event) => {
    const at = now();
    for (const [id, seenAt] of seen) {
      if (at - seenAt < ttlMs && seen.size < MAX_IDS) break;
      seen.delete(id);
    }
    const id = idOf(event);
    if (seen.has(id)) {
      onRepeat(event);
      return;
    }
    seen.set(id, at);
    return handle(event);
  };
}
