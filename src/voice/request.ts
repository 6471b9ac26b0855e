import type { GenerateResult, Speaker } from '../tts/index.ts';

// What a voice session is asked to say, how it asks the service for it, and how much may wait: the types the rest
// of Herald hands to voice (re-exported by queue.ts and session.ts).

/** One thing a member asked Herald to say. */
export interface SpeechRequest {
  readonly text: string;
  readonly speaker: Speaker;
  /** The service's variability (0.5–2.0); undefined leaves the service's default. */
  readonly temperature?: number;
  readonly requestedBy: { readonly id: string; readonly name: string };
  /** Identifies the source (e.g. a message id) so it can be withdrawn with `SpeechQueue.withdraw`. */
  readonly key?: string;
  /** Told, once, when this utterance could not be spoken; never called for a skip, stop or withdrawal. */
  readonly onFailure: (error: unknown) => void;
}

/** Asks the TTS service for speech for `guildId` (whose budget pays); rejects on failure; honours `signal`. */
export type Synthesize = (
  request: SpeechRequest,
  signal: AbortSignal,
  guildId: string,
) => Promise<GenerateResult>;

/** How much one server, and one member in it, may have queued. */
export interface QueueLimits {
  /** Utterances queued in the server, the one playing included. */
  readonly perServer: number;
  /** Utterances one member has queued in the server, the one playing included. */
  readonly perMember: number;
}

/** Outcome of `SpeechQueue.enqueue`: queued (`ahead` before it; 0 when it is next), or refused when full. */
export type EnqueueOutcome =
  | { readonly kind: 'queued'; readonly ahead: number }
  | { readonly kind: 'queue-full'; readonly scope: 'server' | 'member'; readonly limit: number };
