/**
 * The interactions this process has received and not yet answered (issue 44: "interactions are answered first").
 * Discord forgets an interaction not answered within three seconds; when a thousand members ask at once, a start
 * let through meanwhile takes the core the answers need, and its own first packets wait behind them (late). The
 * start gate reads {@link Answering.pending} to hold starts back while a busy machine answers.
 */
export interface Answering {
  /** Interactions received and not yet answered (their handler has not settled). */
  readonly pending: number;
  /** `handler`, counted: an interaction is pending from the call until its promise settles. */
  around<A extends unknown[]>(handler: (...args: A) => Promise<void>): (...args: A) => Promise<void>;
}

/** Creates the process's {@link Answering}: one per process, as the start gate is. */
export function createAnswering(): Answering {
  let pending = 0;
  return {
    get pending() {
      return pending;
    },
    around(handler) {
      return async (...args) => {
        pending++;
        try {
          await handler(...args);
        } finally {
          pending--;
        }
      };
    },
  };
}
