/** An utterance as the speech queue keeps it, and why one ends unheard (src/voice/queue.ts plays them). */
import type { ReadAhead } from '../audio/read-ahead.ts';
import type { Release } from '../rush/index.ts';
import type { GenerateResult } from '../tts/index.ts';
import type { SpeechRequest } from './request.ts';

/** Why a session ended; each maps to what Herald tells the server. */
export type SessionEnd =
  | 'left'
  | 'idle'
  | 'alone'
  | 'kicked'
  | 'channel-deleted'
  | 'lost-speak'
  | 'removed'
  | 'connection-failed'
  | 'connection-lost'
  | 'shutdown';

/** Why an utterance was dropped before it was heard: a member's `/skip` or `/stop`, a deleted message, or the end. */
export type DropReason = 'skip' | 'stop' | 'withdrawn' | 'failed' | SessionEnd;

/** Paid audio, read ahead into memory so it is ready the moment it is due. */
export interface Prepared {
  readonly result: GenerateResult;
  readonly body: ReadAhead;
}

/** An utterance in the queue; the player carries it as its resource's metadata. */
export interface Utterance {
  readonly request: SpeechRequest;
  /** Code points of the text, as the service bills them. */
  readonly characters: number;
  readonly abort: AbortController;
  /** Set when it was dropped; what it was dropped for. */
  dropped: DropReason | undefined;
  /** The synthesis, once started (the money is reserved then, and paid when its headers arrive). */
  synthesis: Promise<Prepared> | undefined;
  prepared: Prepared | undefined;
  /** True once it is due (first in line with a connection that can play): it plays as soon as it is ready. */
  due: boolean;
  /** True once handed to the player. */
  playing: boolean;
  /** How much of it the player has played, in ms, once it started; a cut after the first frame counts as heard. */
  position: (() => number) | undefined;
  /** What broke the audio stream, kept because the player's error carries only the message. */
  streamError: unknown;
  /** True when its audio came slower than real time and waited at its start to play through (the session says). */
  slowStart: boolean;
  /** Its hold on the start gate, from its turn until it plays (or fails, or is dropped). */
  release: Release | undefined;
  /** True while its characters count in the process's queued tally: queued, its synthesis not started, not dropped. */
  counted: boolean;
}

/** Ends an utterance's hold on the start gate, if it holds it. */
export function releaseGate(utterance: Utterance): void {
  const release = utterance.release;
  utterance.release = undefined;
  release?.();
}

/**
 * Whether any of an utterance reached the channel: handed to a player that has played at least one frame of it.
 * One handed over while the connection was gone (the player paused, nothing sent) was paid for and never heard.
 */
export function heard(utterance: Utterance): boolean {
  return utterance.playing && (utterance.position?.() ?? 0) > 0;
}
