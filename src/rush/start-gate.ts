/**
 * Playing comes first (issue 44): the starts of utterances in one process pass one at a time through a gate that
 * opens only while the event loop keeps time. A start (a reservation, a download or a cache read, a demuxer, a
 * player) is dozens of small pieces of work on the event loop that also runs the audio cycle of every stream
 * already playing (a timer every 20 ms). When hundreds of members ask at once and every start runs at once, those
 * pieces queue in front of the audio cycle, every playing stream's packets leave late, and every start finishes
 * late too, all together at the end of the rush. Through the gate, starts begin in the order they were asked, each
 * only after a probe timer fired on time (the loop is not behind; but at least one every
 * {@link StartGateOptions.maxHoldMs}), and at most {@link StartGateOptions.maxRunning} are under way at once: the loop keeps room for the audio cycle and the interactions, and the first members to ask
 * hear their first word first. Where several processes share the machine's cores, a probe on time is not enough:
 * the gate also waits while the machine has no idle time ({@link StartGateOptions.machineBusy}), which each process
 * alone cannot see on its own timers. And while the process has interactions to answer on a busy machine, the
 * floor is a second rather than a tenth: the answers come first ({@link StartGateOptions.answering}).
 */

/** Ends a start's hold on the gate; calling it again does nothing. */
export type Release = () => void;

/** The gate every start of an utterance in this process passes (see the module's comment). */
export interface StartGate {
  /**
   * Resolves with this start's {@link Release} once it is its turn: starts are let through in the order they
   * entered. @throws the signal's reason (rejects) if it aborts while the start waits; it then holds nothing.
   */
  enter(signal?: AbortSignal): Promise<Release>;
  /** Starts waiting for their turn. */
  readonly waiting: number;
  /** Starts let through and not yet released. */
  readonly running: number;
}

/** Options of {@link createStartGate}; the defaults are what Herald runs with. */
export interface StartGateOptions {
  /** At most this many starts under way at once (let through, not yet released); default 64. */
  readonly maxRunning?: number;
  /** The probe timer's delay, ms: at most one start is let through per probe; default 5. */
  readonly probeMs?: number;
  /**
   * A probe firing more than this late (ms) means the loop is behind: nobody is let through, and the next probe
   * measures again; default 10 (half of an audio cycle).
   */
  readonly maxLagMs?: number;
  /**
   * However late the probes fire, one start is let through at least this often (ms) while starts wait; default
   * 100. A probe is also late when the machine gives the process no core (other work, a noisy neighbour), which
   * no waiting here would cure: without a floor, starts could wait as long as that lasts.
   */
  readonly maxHoldMs?: number;
  /**
   * True while the machine's cores are all taken (see src/rush/machine-load.ts): a probe that fired on time lets
   * nobody through then either, as when it fired late. None: the probe's own lateness alone decides.
   */
  readonly machineBusy?: () => boolean;
  /**
   * True while this process has interactions to answer (see src/rush/answering.ts): while the machine is busy then,
   * the floor is {@link maxHoldAnsweringMs} rather than {@link maxHoldMs}, so the answers (Discord's three
   * seconds) go before the starts. None: never.
   */
  readonly answering?: () => boolean;
  /** The floor while {@link answering}, ms; default 1,000. */
  readonly maxHoldAnsweringMs?: number;
  /** Clock in ms; `performance.now` by default. */
  readonly now?: () => number;
}

/** Starts under way at once, at most (see {@link StartGateOptions.maxRunning}). */
export const DEFAULT_MAX_RUNNING = 64;
const DEFAULT_PROBE_MS = 5;
const DEFAULT_MAX_LAG_MS = 10;
const DEFAULT_MAX_HOLD_MS = 100;
const DEFAULT_MAX_HOLD_ANSWERING_MS = 1_000;

interface Waiter {
  readonly resolve: (release: Release) => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/** Creates a {@link StartGate}; one per process (its event loop is what the gate protects). */
export function createStartGate(options: StartGateOptions = {}): StartGate {
  const maxRunning = options.maxRunning ?? DEFAULT_MAX_RUNNING;
  const probeMs = options.probeMs ?? DEFAULT_PROBE_MS;
  const maxLagMs = options.maxLagMs ?? DEFAULT_MAX_LAG_MS;
  const maxHoldMs = options.maxHoldMs ?? DEFAULT_MAX_HOLD_MS;
  const maxHoldAnsweringMs = options.maxHoldAnsweringMs ?? DEFAULT_MAX_HOLD_ANSWERING_MS;
  const now = options.now ?? (() => performance.now());
  const waiters: Waiter[] = [];
  let running = 0;
  /** When a start was last let through (or the first began to wait): the floor of `maxHoldMs` counts from it. */
  let lastThrough = Number.NEGATIVE_INFINITY;
  let probe: NodeJS.Timeout | undefined;

  const letThrough = (waiter: Waiter): void => {
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    running++;
    lastThrough = now();
    let held = true;
    waiter.resolve(() => {
      if (!held) return;
      held = false;
      running--;
      schedule();
    });
  };

  // One probe at a time: it fires `probeMs` later, and how late it fires says whether the loop keeps time.
  const schedule = (): void => {
    if (probe !== undefined || waiters.length === 0 || running >= maxRunning) return;
    const firesAt = now() + probeMs;
    probe = setTimeout(() => {
      probe = undefined;
      const next = waiters[0];
      const onTime = now() - firesAt <= maxLagMs && !options.machineBusy?.();
      const floor = options.answering?.() ? maxHoldAnsweringMs : maxHoldMs;
      if (next && running < maxRunning && (onTime || now() - lastThrough >= floor)) {
        waiters.shift();
        letThrough(next);
      }
      schedule();
    }, probeMs);
  };

  return {
    enter(signal) {
      return new Promise<Release>((resolve, reject) => {
        if (signal?.aborted) {
          reject(signal.reason);
          return;
        }
        const waiter: Waiter = {
          resolve,
          reject,
          signal,
          onAbort: () => {
            const index = waiters.indexOf(waiter);
            if (index === -1) return;
            waiters.splice(index, 1);
            reject(signal?.reason);
          },
        };
        // A lone start (nothing under way, nobody waiting) goes at once: a quiet server's /speak pays nothing. Not
        // while a busy machine answers interactions: the first start of a rush would play its first packets behind
        // the answers.
        const answeringBusy = (options.answering?.() ?? false) && (options.machineBusy?.() ?? false);
        if (running === 0 && waiters.length === 0 && probe === undefined && !answeringBusy) {
          letThrough(waiter);
          return;
        }
        signal?.addEventListener('abort', waiter.onAbort, { once: true });
        if (waiters.length === 0) lastThrough = Math.max(lastThrough, now());
        waiters.push(waiter);
        schedule();
      });
    },
    get waiting() {
      return waiters.length;
    },
    get running() {
      return running;
    },
  };
}
