import type { CacheLookup } from '../cache/index.ts';

/**
 * The typed events Herald's parts report for operations. The composition root hands one {@link OpsEvents} to
 * the observers it wires; the metrics registry implements it. Every label value is from a small closed set:
 * never a member's text, a name or an id.
 */

/** Where an utterance came from. */
export type UtteranceSource = 'speak' | 'autoread';

/**
 * How an utterance ended, counted once each: heard (its first voice packet went out), refused (by the budget or a
 * full queue), or failed.
 */
export type UtteranceOutcome = 'spoken' | 'refused' | 'failed';

/**
 * How Discord took the first answer to an interaction (a reply or a deferral): accepted; expired (refused as an
 * unknown interaction: it came after the three seconds Discord waits, and the member saw "The application did not
 * respond"); or refused for another reason.
 */
export type InteractionAnswer = 'accepted' | 'expired' | 'refused';

/** Why spending stopped (the budget store's block reasons). */
export type BudgetStopReason = 'floor-reached' | 'service-refused' | 'balance-unknown';

/** Events of the operations view. Implementations must not throw: they are called on hot paths. */
export interface OpsEvents {
  /** An utterance was queued in a voice session. */
  utteranceQueued(source: UtteranceSource): void;
  /** An utterance ended. */
  utteranceEnded(source: UtteranceSource, outcome: UtteranceOutcome): void;
  /** The first voice packet of an utterance left, `seconds` after it was queued (`/speak` → first packet). */
  firstPacket(source: UtteranceSource, seconds: number): void;
  /** A generation's response headers (its first byte) came `seconds` after the request. */
  ttsFirstByte(seconds: number): void;
  /** A TTS call failed; `code` is the client's stable error code (`TTS_TIMEOUT`, …) or `OTHER`. */
  ttsError(code: string): void;
  /** A generation was written to the ledger. */
  charged(characters: number, usd: number): void;
  /** Spending stopped. */
  budgetStopped(reason: BudgetStopReason): void;
  /** The audio cache answered a request it may serve: played it without paying, or paid for it. */
  cacheLookup(kind: CacheLookup): void;
  /** A cache hit was written to the cache's ledger: what it did not spend. */
  cacheSaved(characters: number, usd: number): void;
  /** The audio cache evicted entries to make room. */
  cacheEvicted(entries: number): void;
  /** A voice packet went out, and whether it was late (more than a frame after the previous one). */
  voicePacket(late: boolean): void;
  /** The player sent a frame of silence inside an utterance: its audio had not arrived in time. */
  voiceStarved(): void;
  /** An utterance's audio ran out inside its words: the first of one or more frames of silence (one gap). */
  voiceGap(): void;
  /** An utterance started late on purpose: its audio came slower than real time, and waited to play through. */
  voiceSlowStart(): void;
  /** Discord answered the first answer to an interaction, `seconds` after the interaction was created. */
  interactionAnswered(outcome: InteractionAnswer, seconds: number): void;
  /** The gateway connection was lost and is being re-established. */
  gatewayReconnect(): void;
  /** A DAVE (end-to-end encryption) protocol transition completed. */
  daveTransition(): void;
  /** A DAVE failure: a voice close for DAVE reasons, or an encryption error. */
  daveFailure(kind: 'close' | 'error'): void;
  /** An error reached the process itself: a rejection nobody handled, or an uncaught exception (then it exits). */
  processError(kind: ProcessErrorKind): void;
}

/** What reached the process's last-resort handlers. */
export type ProcessErrorKind = 'unhandled-rejection' | 'uncaught-exception';

/** Events that go nowhere: the default when the operations endpoint is off. */
export const noOpsEvents: OpsEvents = {
  utteranceQueued: () => {},
  utteranceEnded: () => {},
  firstPacket: () => {},
  ttsFirstByte: () => {},
  ttsError: () => {},
  charged: () => {},
  budgetStopped: () => {},
  cacheLookup: () => {},
  cacheSaved: () => {},
  cacheEvicted: () => {},
  voicePacket: () => {},
  voiceStarved: () => {},
  voiceGap: () => {},
  voiceSlowStart: () => {},
  interactionAnswered: () => {},
  gatewayReconnect: () => {},
  daveTransition: () => {},
  daveFailure: () => {},
  processError: () => {},
};
