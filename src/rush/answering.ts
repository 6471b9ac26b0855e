/**
 * The interactions this process has received and not yet answered (issue 44: "interactions are answered first").
 * Discord forgets an interaction not answered within three seconds; when a thousand members ask at once, a start
 * let through meanwhile takes the core the answers need, and its own first packets wait behind them (late). The
 * start gate reads {@link Answering.pending} to hold starts back while a busy machine answers.
 */
export interface Answering {
  /**
   * Interactions received and not yet answered (their handler has not settled), younger than Discord's three
   * seconds: a handler still waiting after that (on a slow service, say) is past what holding starts could help.
   */
  readonly pending: number;
  /** `handler`, counted: an interaction is pending from the call until its promise settles. */
  around<A extends unknown[]>(handler: (...args: A) => Promise<void>): (...args: A) => Promise<void>;
}

/** Discord forgets an interaction not answered (or deferred) within this long of its arrival. */
export const ANSWER_WITHIN_MS = 3_000;

/** Creates the process's {@link Answering}: one per process, as the start gate is. */
export function createAnswering(now: () => number = () => performance.now()): Answering {
  // When each pending interaction arrived, oldest first (Set keeps insertion order).
  const arrivals = new Set<{ readonly at: number }>();
  return {
    get pending() {
      const oldest = now() - ANSWER_WITHIN_MS;
      for (const arrival of arrivals) {
        if (arrival.at > oldest) break;
        arrivals.delete(arrival);
      }
      return arrivals.size;
    },
    around(handler) {
      return async (...args) => {
        const arrival = { at: now() };
        arrivals.add(arrival);
        try {
          await handler(...args);
        } finally {
          arrivals.delete(arrival);
        }
      };
    },
  };
}
