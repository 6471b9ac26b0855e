import { ReadAhead } from '../audio/read-ahead.ts';
import type { Logger } from '../log.ts';
import type { StartGate } from '../rush/index.ts';
import { countCharacters, type GenerateResult, TtsAbortedError } from '../tts/index.ts';
import type { SynthesisPacing } from './pacing.ts';
import type { QueuedTally } from './queued-tally.ts';
import type { EnqueueOutcome, QueueLimits, SpeechRequest, Synthesize } from './request.ts';

import {
  type DropReason,
  heard,
  type Prepared,
  releaseGate,
  type SessionEnd,
  type Utterance,
} from './utterance.ts';

export type {
  DropReason,
  EnqueueOutcome,
  Prepared,
  QueueLimits,
  SessionEnd,
  SpeechRequest,
  Synthesize,
  Utterance,
};

/** Options of {@link SpeechQueue}. */
export interface SpeechQueueOptions {
  readonly guildId: string;
  readonly synthesize: Synthesize;
  readonly pacing: SynthesisPacing;
  readonly limits: QueueLimits;
  readonly logger: Logger;
  /**
   * Awaited before an utterance is handed to the player (e.g. until DAVE's end-to-end encryption is ready);
   * rejecting fails the utterance (its member is told) and the queue moves on.
   */
  readonly beforePlay?: (utterance: Utterance) => Promise<void>;
  /** Hands prepared audio to the player; the session reports back with `started` and `finished`. */
  readonly play: (utterance: Utterance, prepared: Prepared) => void;
  /** Cuts what the player is playing now (its `finished` follows). */
  readonly stopPlayback: () => void;
  /** Told of audio that was paid for and will never be played, and why. */
  readonly onUnplayed?: (result: GenerateResult, request: SpeechRequest, reason: DropReason) => void;
  /** Told when the queue has become empty (nothing playing, nothing waiting). */
  readonly onEmpty?: () => void;
  /**
   * Told when the utterance after the one playing is ready to play: the one playing may then end without the
   * silence that marks a pause in transmission, since the next follows at once.
   */
  readonly onNextReady?: () => void;
  /** Told after any change to what is still to be heard ({@link SpeechQueue.unheard}). */
  readonly onChange?: () => void;
  /**
   * The process's start gate (src/rush): an utterance not yet synthesised waits for its turn there before its
   * synthesis, and holds it until it plays. None: every start goes at once.
   */
  readonly startGate?: StartGate;
  /**
   * The process's count of characters queued and not yet reserved (every server's), which the budget reads at each
   * /speak: this queue adds an utterance when it is queued and takes it back when its synthesis starts or it is
   * dropped.
   */
  readonly tally?: QueuedTally;
  /** Clock in ms; `performance.now` by default. */
  readonly now?: () => number;
}

/**
 * About a second of Opus speech (4-8 KiB/s). The rest of a download waits in the socket (the kernel's buffer, then
 * the service's), not in this process: reading a service that streams four times faster than real time as fast as
 * it sent made every utterance's download and demuxing happen in its first seconds, and 200 members asking at once
 * then held the event loop while their first packets went out (P4 in `npm run bench`). The limit holds for Ogg
 * because the packetizer takes 1 KiB at a time (src/audio/ogg-opus.ts); WAV's converter still buffers up to
 * Node's default 64 KiB (about 1.3 s of 24 kHz mono PCM) beyond it.
 */
const READ_AHEAD_BYTES = 8 * 1024;

/**
 * One server's FIFO of utterances. Plays strictly in request order and pays as late as gapless playback allows:
 * nothing is synthesised until the voice connection can play, the utterance due next is synthesised only when the
 * one playing is within the measured TTS lead of its end (never two ahead), and audio paid for but dropped is
 * reported as unplayed. Dropping anything at any moment is a normal event: every stream it creates has its error
 * handled where it is created.
 */
export class SpeechQueue {
  readonly #options: SpeechQueueOptions;
  readonly #now: () => number;
  #waiting: Utterance[] = [];
  #current: Utterance | undefined;
  #canPlay = false;
  #closed = false;
  #position: (() => number) | undefined;
  #prefetchTimer: NodeJS.Timeout | undefined;
  readonly #reported = new WeakSet<Utterance>();
  /** Set while draining: resolved once nothing already paid for is left to play. */
  #drained: (() => void) | undefined;

  constructor(options: SpeechQueueOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Utterances not yet finished, the one playing included. */
  get pending(): number {
    return this.#waiting.length + (this.#current ? 1 : 0);
  }

  /**
   * What is still to be heard, in order: every utterance not yet handed to the player (and, with
   * `includePlaying`, the one playing now: a graceful shutdown keeps it to say again after the restart).
   */
  unheard(options: { includePlaying?: boolean } = {}): SpeechRequest[] {
    return this.#all()
      .filter((utterance) => (options.includePlaying || !utterance.playing) && !utterance.dropped)
      .map((utterance) => utterance.request);
  }

  /** Whether the voice connection can play now, or will within the time a synthesis takes. */
  setCanPlay(canPlay: boolean): void {
    this.#canPlay = canPlay;
    if (canPlay) this.#pump();
    else clearTimeout(this.#prefetchTimer);
  }

  /** Queues an utterance, unless the server's or the member's queue is full. */
  enqueue(request: SpeechRequest): EnqueueOutcome {
    if (this.#closed) throw new Error('enqueue on a closed speech queue');
    const { perServer, perMember } = this.#options.limits;
    if (this.pending >= perServer) return { kind: 'queue-full', scope: 'server', limit: perServer };
    const mine = this.#all().filter((u) => u.request.requestedBy.id === request.requestedBy.id).length;
    if (mine >= perMember) return { kind: 'queue-full', scope: 'member', limit: perMember };
    const ahead = this.pending;
    const utterance: Utterance = {
      request,
      characters: countCharacters(request.text),
      abort: new AbortController(),
      dropped: undefined,
      synthesis: undefined,
      prepared: undefined,
      due: false,
      playing: false,
      position: undefined,
      streamError: undefined,
      slowStart: false,
      release: undefined,
      counted: false,
    };
    this.#setCounted(utterance, true);
    this.#waiting.push(utterance);
    this.#pump();
    this.#changed();
    return { kind: 'queued', ahead };
  }

  /** Skips the utterance due now (playing, or still being prepared); false when there is none. */
  skip(): boolean {
    const current = this.#current;
    if (!current) return false;
    this.#dropCurrent('skip');
    this.#changed();
    return true;
  }

  /** Drops a queued utterance that has not started playing (e.g. its message was deleted); false when none has `key`. */
  withdraw(key: string): boolean {
    const index = this.#waiting.findIndex((utterance) => utterance.request.key === key);
    if (index !== -1) {
      const [utterance] = this.#waiting.splice(index, 1);
      if (utterance) this.#drop(utterance, 'withdrawn');
      this.#schedulePrefetch();
      this.#changed();
      return true;
    }
    const current = this.#current;
    if (current && !current.playing && current.request.key === key) {
      this.#dropCurrent('withdrawn');
      this.#changed();
      return true;
    }
    return false;
  }

  /**
   * Puts `request` in place of the waiting utterance with the same key (an edited message), keeping its place in
   * line; false when none waits with that key or its synthesis has begun (it was paid for as it was).
   */
  replace(request: SpeechRequest): boolean {
    const index = this.#waiting.findIndex((utterance) => utterance.request.key === request.key);
    const old = this.#waiting[index];
    if (request.key === undefined || !old || old.synthesis) return false;
    this.#setCounted(old, false);
    const edited: Utterance = { ...old, request, characters: countCharacters(request.text), counted: false };
    this.#setCounted(edited, true);
    this.#waiting[index] = edited;
    this.#changed();
    return true;
  }

  /** Clears the queue and cuts the current utterance; returns how many were dropped. */
  stop(reason: DropReason = 'stop'): number {
    const dropped = this.pending;
    clearTimeout(this.#prefetchTimer);
    for (const utterance of this.#waiting.splice(0)) this.#drop(utterance, reason);
    if (this.#current) this.#dropCurrent(reason);
    // The end of a session is not a change of its queue: a shutdown keeps what was saved, to finish after a restart.
    if (!this.#closed) this.#changed();
    return dropped;
  }

  /**
   * Plays out what is already paid for (the utterance playing, and the one synthesised ahead of it) and pays for
   * nothing more; resolves once none of it is left (a graceful shutdown then saves the rest for after the
   * restart). What waits unpaid stays queued.
   */
  drain(): Promise<void> {
    clearTimeout(this.#prefetchTimer);
    return new Promise((resolve) => {
      this.#drained = resolve;
      this.#pump();
    });
  }

  /** Drops everything and accepts nothing more. */
  close(reason: SessionEnd): void {
    if (this.#closed) return;
    this.#closed = true;
    this.stop(reason);
    this.#drained?.();
    this.#drained = undefined;
  }

  /** The player started (or resumed) `utterance`; `position` reads how much of it has been played, in ms. */
  started(utterance: Utterance, position: () => number): void {
    releaseGate(utterance);
    if (utterance !== this.#current) return;
    utterance.position = position;
    this.#position = position;
    this.#schedulePrefetch();
  }

  /** The player is done with `utterance` (played out, cut, or failed). */
  finished(utterance: Utterance): void {
    // Releases the HTTP stream if the player gave up on the resource early.
    utterance.abort.abort();
    releaseGate(utterance);
    if (this.#current !== utterance) return;
    this.#current = undefined;
    this.#position = undefined;
    this.#pump();
  }

  #notify(listener: (() => void) | undefined): void {
    try {
      listener?.();
    } catch (error) {
      this.#options.logger.error('a queue listener failed', { err: error });
    }
  }

  #changed(): void {
    if (this.#closed) return;
    try {
      this.#options.onChange?.();
    } catch (error) {
      this.#options.logger.error('saving the queue failed', { err: error });
    }
  }

  #all(): Utterance[] {
    return this.#current ? [this.#current, ...this.#waiting] : this.#waiting;
  }

  #pump(): void {
    if (this.#closed) return;
    if (this.#drained && !this.#current?.synthesis && !this.#waiting[0]?.synthesis) {
      // Draining, and nothing paid is left to play: what waits is saved unpaid.
      if (this.#current && !this.#current.synthesis) this.#waiting.unshift(this.#current);
      this.#current = undefined;
      const resolve = this.#drained;
      this.#drained = undefined;
      resolve();
      return;
    }
    if (!this.#current) {
      const next = this.#waiting.shift();
      if (!next) {
        clearTimeout(this.#prefetchTimer);
        this.#options.onEmpty?.();
        return;
      }
      this.#current = next;
    }
    if (!this.#canPlay) return;
    const current = this.#current;
    if (!current.due) {
      current.due = true;
      void this.#start(current);
    }
    this.#schedulePrefetch();
  }

  /** Synthesises the next utterance once the one playing is within the lead of its end. */
  #schedulePrefetch(): void {
    clearTimeout(this.#prefetchTimer);
    const current = this.#current;
    const next = this.#waiting[0];
    if (this.#drained || !this.#canPlay || !current?.playing || !next || next.synthesis) return;
    const durationS = current.prepared?.result.durationS;
    if (durationS === undefined) {
      // Without the duration the end cannot be foreseen: one ahead is the closest to "just in time" there is.
      this.#prepare(next);
      return;
    }
    // Handed to the player but not started yet (it waits for its first frames): started() schedules this again
    // once there is a position to count from. Preparing now would pay for the next one early.
    if (this.#position === undefined) return;
    const dueInMs = durationS * 1000 - this.#position() - this.#options.pacing.leadMs();
    if (dueInMs <= 0) this.#prepare(next);
    else this.#prefetchTimer = setTimeout(() => this.#schedulePrefetch(), dueInMs);
  }

  async #start(utterance: Utterance): Promise<void> {
    try {
      // One synthesised ahead (the next of a queue, following the one before without a gap) needs no turn.
      const gate = this.#options.startGate;
      if (gate && !utterance.synthesis) {
        const askedAt = this.#now();
        utterance.release = await gate.enter(utterance.abort.signal);
        this.#options.logger.debug('start gate passed', { waitedMs: Math.round(this.#now() - askedAt) });
        if (this.#current !== utterance || utterance.dropped) {
          releaseGate(utterance);
          return;
        }
      }
      const prepared = await this.#prepare(utterance);
      if (this.#current !== utterance || utterance.dropped) return;
      if (this.#options.beforePlay) {
        await this.#options.beforePlay(utterance);
        if (this.#current !== utterance || utterance.dropped) return;
      }
      utterance.playing = true;
      this.#options.play(utterance, prepared);
      this.#changed();
    } catch (error) {
      releaseGate(utterance);
      this.#setCounted(utterance, false);
      if (!utterance.dropped) utterance.request.onFailure(error);
      // Paid and failed before it was played (e.g. DAVE never got ready): unheard.
      if (utterance.prepared) this.#discard(utterance, 'failed');
      if (this.#current === utterance) {
        this.#current = undefined;
        this.#pump();
      }
      this.#changed();
    }
  }

  #prepare(utterance: Utterance): Promise<Prepared> {
    if (utterance.synthesis) return utterance.synthesis;
    // Reserved by the budget from here on: no longer "queued".
    this.#setCounted(utterance, false);
    const startedAt = this.#now();
    const synthesis = this.#options
      .synthesize(utterance.request, utterance.abort.signal, this.#options.guildId)
      .then((result) => {
        this.#options.pacing.record(this.#now() - startedAt);
        const body = new ReadAhead(result.audio, { limitBytes: READ_AHEAD_BYTES });
        // Dropping an utterance destroys its body mid-download: that error is expected, and handled here.
        body.on('error', (error) => {
          utterance.streamError ??= error;
        });
        result.audio.on('error', (error) => {
          utterance.streamError = error;
          body.destroy(error);
        });
        const prepared = { result, body };
        utterance.prepared = prepared;
        if (utterance.dropped) {
          // Paid while it was being dropped: the money is spent, the audio will never be heard.
          this.#discard(utterance, utterance.dropped);
          throw new TtsAbortedError();
        }
        if (this.#current?.playing && this.#waiting[0] === utterance) this.#notify(this.#options.onNextReady);
        return prepared;
      });
    // Awaited by #start; this keeps the failure of an utterance dropped before it is due from going unhandled.
    synthesis.catch(() => {});
    utterance.synthesis = synthesis;
    return synthesis;
  }

  #dropCurrent(reason: DropReason): void {
    const current = this.#current;
    if (!current) return;
    this.#drop(current, reason);
    if (current.playing) {
      // The player goes idle and `finished` moves on.
      this.#options.stopPlayback();
      return;
    }
    this.#current = undefined;
    this.#position = undefined;
    this.#pump();
  }

  #drop(utterance: Utterance, reason: DropReason): void {
    this.#setCounted(utterance, false);
    utterance.dropped ??= reason;
    utterance.abort.abort();
    releaseGate(utterance);
    if (utterance.prepared && !heard(utterance)) this.#discard(utterance, reason);
  }

  /** Puts `utterance` in the process's tally of characters queued and not yet reserved, or takes it out; once. */
  #setCounted(utterance: Utterance, counted: boolean): void {
    if (utterance.counted === counted) return;
    utterance.counted = counted;
    const { tally, guildId } = this.#options;
    const userId = utterance.request.requestedBy.id;
    if (counted) tally?.add(guildId, userId, utterance.characters);
    else tally?.remove(guildId, userId, utterance.characters);
  }

  #discard(utterance: Utterance, reason: DropReason): void {
    const prepared = utterance.prepared;
    if (!prepared || heard(utterance) || this.#reported.has(utterance)) return;
    this.#reported.add(utterance);
    prepared.body.destroy();
    this.#options.logger.debug('paid audio dropped unplayed', { reason, characters: utterance.characters });
    try {
      this.#options.onUnplayed?.(prepared.result, utterance.request, reason);
    } catch (error) {
      this.#options.logger.error('recording unplayed audio failed', { err: error });
    }
  }
}
