import {
  type AudioPlayer,
  AudioPlayerStatus,
  NetworkingStatusCode,
  type VoiceConnection,
  VoiceConnectionStatus,
} from '@discordjs/voice';

/**
 * Whether the first frame of an utterance may leave. @discordjs/voice sends a frame without end-to-end
 * encryption whenever its DAVE session is not ready (before the first MLS group, after a sole-member reset,
 * while re-keying), and a member's DAVE client refuses such a frame; so with DAVE negotiated and someone
 * listening, Herald waits for the transition before playing.
 */
export type E2eeGate =
  /** DAVE's group is established and its transition executed: frames leave end-to-end encrypted. */
  | { readonly kind: 'ready' }
  /** Nothing to wait for: DAVE declined (`no-dave`), or nobody else is in the call (`alone`). */
  | { readonly kind: 'not-needed'; readonly reason: 'no-dave' | 'alone' }
  /** Still not ready after `timeoutMs`, even after asking the DAVE session to re-key once. */
  | { readonly kind: 'timed-out' }
  | { readonly kind: 'aborted' };

/** Options of {@link awaitE2eeReady}. */
export interface E2eeGateOptions {
  /** Whether anyone besides Herald is in the voice channel (from the guild's voice states). */
  readonly othersPresent: () => boolean;
  /** The longest wait, re-key included. */
  readonly timeoutMs: number;
  /** Ask the DAVE session to re-key (op 31 and a new key package) when not ready after this long; default half of `timeoutMs`. */
  readonly rekeyAfterMs?: number;
  /**
   * Once the session is ready, how long to wait for a pending transition to execute (op 22, sent when every
   * member has processed the commit or welcome); a transition the gateway never executes does not block
   * speech beyond this. Default 500 ms.
   */
  readonly transitionGraceMs?: number;
  /**
   * Who besides Herald is in the voice channel (user ids). Once Herald's own group is ready, the first frame
   * also waits until each of them holds the group (a member who joined a moment ago is still being added), for
   * at most `memberGraceMs`: a member who never joins the group does not silence everyone else.
   */
  readonly membersPresent?: () => readonly string[];
  /** The longest wait for members still joining the group, after Herald's group is ready. Default 1500 ms. */
  readonly memberGraceMs?: number;
  readonly signal?: AbortSignal;
}

/** What Herald reads of @discordjs/voice's DAVESession wrapper (its `pendingTransitions` is private in the typings). */
export interface DaveState {
  readonly protocolVersion: number;
  readonly session?: { readonly ready: boolean; getUserIds?(): string[] } | undefined;
  readonly lastTransitionId?: number | undefined;
  readonly pendingTransitions?: ReadonlyMap<number, number>;
  recoverFromInvalidTransition(transitionId: number): void;
}

// Re-checks between events: presence in the channel changes without an event on the connection.
const POLL_MS = 20;

/** The connection's DAVE state, or why there is none yet: `waiting` until the voice connection is Ready. */
export function daveStateOf(connection: VoiceConnection): DaveState | 'waiting' | 'no-dave' {
  const state = connection.state;
  if (state.status !== VoiceConnectionStatus.Ready) return 'waiting';
  const networking = state.networking.state;
  if (networking.code !== NetworkingStatusCode.Ready) return 'waiting';
  const dave = networking.dave as DaveState | undefined;
  return dave && dave.protocolVersion > 0 ? dave : 'no-dave';
}

/** True when the session is ready and no transition is pending: every member holds the keys it encrypts with. */
export function e2eeReady(dave: DaveState): boolean {
  return dave.session?.ready === true && (dave.pendingTransitions?.size ?? 0) === 0;
}

/**
 * Resolves when the next frame may be played on `connection`: at once when DAVE is declined or Herald is alone
 * in the call, else when DAVE's transition has executed. Never rejects.
 */
export function awaitE2eeReady(connection: VoiceConnection, o: E2eeGateOptions): Promise<E2eeGate> {
  const startedAt = Date.now();
  const rekeyAfterMs = o.rekeyAfterMs ?? o.timeoutMs / 2;
  const transitionGraceMs = o.transitionGraceMs ?? 500;
  const memberGraceMs = o.memberGraceMs ?? 1_500;
  let rekeyed = false;
  let sessionReadySince: number | undefined;
  let groupReadySince: number | undefined;

  /** Ready once every member present holds the group too, or once they had `memberGraceMs` to join it. */
  const whenMembersHold = (dave: DaveState): E2eeGate | undefined => {
    const present = o.membersPresent?.() ?? [];
    const holding = new Set(dave.session?.getUserIds?.() ?? present);
    if (present.every((id) => holding.has(id))) return { kind: 'ready' };
    groupReadySince ??= Date.now();
    return Date.now() - groupReadySince >= memberGraceMs ? { kind: 'ready' } : undefined;
  };

  const check = (): E2eeGate | undefined => {
    if (o.signal?.aborted) return { kind: 'aborted' };
    const dave = daveStateOf(connection);
    if (dave === 'no-dave') return { kind: 'not-needed', reason: 'no-dave' };
    const elapsed = Date.now() - startedAt;
    if (dave === 'waiting') return elapsed >= o.timeoutMs ? { kind: 'timed-out' } : undefined;
    if (e2eeReady(dave)) return whenMembersHold(dave);
    if (dave.session?.ready) {
      sessionReadySince ??= Date.now();
      if (Date.now() - sessionReadySince >= transitionGraceMs) return whenMembersHold(dave);
    } else sessionReadySince = undefined;
    if (!o.othersPresent()) return { kind: 'not-needed', reason: 'alone' };
    if (elapsed >= o.timeoutMs) return { kind: 'timed-out' };
    if (!rekeyed && elapsed >= rekeyAfterMs) {
      // The library's own recovery: op 31, a fresh key package, and the gateway adds Herald to the group again.
      rekeyed = true;
      dave.recoverFromInvalidTransition(dave.lastTransitionId ?? 0);
    }
    return undefined;
  };

  const first = check();
  if (first) return Promise.resolve(first);
  return new Promise<E2eeGate>((resolve) => {
    const onEvent = (): void => {
      const outcome = check();
      if (!outcome) return;
      clearInterval(poll);
      connection.off('stateChange', onEvent);
      connection.off('transitioned', onEvent);
      o.signal?.removeEventListener('abort', onEvent);
      resolve(outcome);
    };
    const poll = setInterval(onEvent, POLL_MS);
    connection.on('stateChange', onEvent);
    connection.on('transitioned', onEvent);
    o.signal?.addEventListener('abort', onEvent);
  });
}

/** Options of {@link guardE2ee}. */
export interface E2eeGuardOptions {
  /** Whether anyone besides Herald is in the voice channel. */
  readonly othersPresent: () => boolean;
  /** How long the player may stay paused for DAVE; then the utterance is stopped. */
  readonly timeoutMs: number;
}

/** The DAVE session wrapper's events Herald follows: `keyPackage` is emitted whenever it re-initialises. */
type DaveEmitter = DaveState & {
  on(event: 'keyPackage', listener: () => void): unknown;
  off(event: 'keyPackage', listener: () => void): unknown;
};

/**
 * Keeps `player` from sending frames without E2EE in the middle of an utterance. The DAVE session re-initialises
 * (and @discordjs/voice sends plain frames until the group is re-established) after an invalid commit or
 * welcome or a proposal it could not process; while someone else is in the call the player is then paused (it
 * sends the silence frames DAVE lets through) until the transition has executed, and stopped after `timeoutMs`.
 * Returns the function that stops guarding.
 */
export function guardE2ee(connection: VoiceConnection, player: AudioPlayer, o: E2eeGuardOptions): () => void {
  let watched: DaveEmitter | undefined;
  let pausedAt: number | undefined;
  let transitionedWhilePaused = false;
  let poll: NodeJS.Timeout | undefined;
  let unguarded = false;
  const onTransitioned = (): void => {
    if (pausedAt !== undefined) transitionedWhilePaused = true;
    evaluate();
  };

  const evaluate = (): void => {
    // An event being emitted when the guard was removed still reaches it (an emitter calls the listeners it had).
    if (unguarded) return;
    const dave = daveStateOf(connection);
    const session = typeof dave === 'object' ? (dave as DaveEmitter) : undefined;
    if (session !== watched) {
      watched?.off('keyPackage', evaluate);
      session?.on('keyPackage', evaluate);
      watched = session;
    }
    if (pausedAt === undefined) {
      const unsafe = session !== undefined && session.session?.ready !== true && o.othersPresent();
      if (unsafe && player.state.status === AudioPlayerStatus.Playing && player.pause(true)) {
        pausedAt = Date.now();
        transitionedWhilePaused = false;
        poll = setInterval(evaluate, POLL_MS);
      }
      return;
    }
    // Ready again: davey holds the new group and its transition executed (a transition prepared but never
    // executed, as a faulty gateway can leave behind, must not keep the player paused).
    const resumed = session?.session?.ready === true && (e2eeReady(session) || transitionedWhilePaused);
    const safe = dave === 'no-dave' || resumed || !o.othersPresent();
    if (!safe && Date.now() - pausedAt < o.timeoutMs) return;
    // Cleared first: unpausing or stopping emits a state change that calls back into this function.
    pausedAt = undefined;
    clearInterval(poll);
    if (safe) player.unpause();
    else player.stop(true);
  };

  connection.on('stateChange', evaluate);
  connection.on('transitioned', onTransitioned);
  player.on('stateChange', evaluate);
  evaluate();
  return () => {
    unguarded = true;
    clearInterval(poll);
    watched?.off('keyPackage', evaluate);
    connection.off('stateChange', evaluate);
    connection.off('transitioned', onTransitioned);
    player.off('stateChange', evaluate);
  };
}
