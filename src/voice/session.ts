import {
  type AudioPlayer,
  type AudioPlayerError,
  type AudioPlayerState,
  AudioPlayerStatus,
  type AudioResource,
  createAudioPlayer,
  NoSubscriberBehavior,
  type VoiceConnection,
} from '@discordjs/voice';
import { createSpeechResource, STOP_SILENCE_FRAMES, setTrailingSilence } from '../audio/resource.ts';
import { UserFacingError } from '../discord/member-facing.ts';
import type { Logger } from '../log.ts';
import type { StartGate } from '../rush/index.ts';
import { DEFAULT_TIMEOUTS, type GenerateResult } from '../tts/index.ts';
import { VoiceLink, type VoiceLinkOptions } from './connection.ts';
import { awaitE2eeReady, guardE2ee } from './e2ee-gate.ts';
import type { SynthesisPacing } from './pacing.ts';
import { DEFAULT_FRAMES_PER_PACKET } from './packet-defaults.ts';
import {
  type DropReason,
  type EnqueueOutcome,
  type QueueLimits,
  type SessionEnd,
  SpeechQueue,
  type SpeechQueueOptions,
  type SpeechRequest,
  type Synthesize,
  type Utterance,
} from './queue.ts';
import type { QueuedTally } from './queued-tally.ts';

export type {
  DropReason,
  EnqueueOutcome,
  QueueLimits,
  SessionEnd,
  SpeechRequest,
  Synthesize,
} from './queue.ts';

/** Options of {@link GuildSession}; the connection's (guild, channel, adapter, deadlines, join queue) are its link's. */
export interface GuildSessionOptions
  extends Pick<
    VoiceLinkOptions,
    'guildId' | 'channelId' | 'adapterCreator' | 'connectTimeoutMs' | 'maxRejoins' | 'joinQueue'
  > {
  readonly synthesize: Synthesize;
  readonly pacing: SynthesisPacing;
  readonly limits: QueueLimits;
  readonly logger: Logger;
  /** Leave after this long with nothing queued. */
  readonly idleTimeoutMs: number;
  /** Silence between two queued utterances, in ms; default 120. */
  readonly pauseMs?: number;
  /**
   * Up to this many 20 ms frames the resource already holds go out in one voice packet (patch 009); default
   * {@link DEFAULT_FRAMES_PER_PACKET}, 60 ms a packet, as D++ sends its audio (Opus packets may hold up to
   * 120 ms, RFC 6716 §3.2.5). Each packet is end-to-end encrypted (DAVE), encrypted for transport and sent once, so
   * a packet of three frames costs about a third of three packets of one. No frame waits for another: a packet
   * holds only what is ready when it is due. 1: a packet a frame.
   */
  readonly framesPerPacket?: number;
  /** Called once when the session is over, after its clean-up. */
  readonly onEnd: (reason: SessionEnd) => void;
  /** Told of audio that was paid for and will never be played, and why. */
  readonly onUnplayed?: (result: GenerateResult, request: SpeechRequest, reason: DropReason) => void;
  /** Whether anyone besides Herald sits in its voice channel: then no frame may leave without DAVE's E2EE. */
  readonly othersPresent?: () => boolean;
  /** Who besides Herald sits in its voice channel: the first frame waits (briefly) until they hold the DAVE group. */
  readonly membersPresent?: () => readonly string[];
  /** Told after any change to what is still to be heard (see {@link GuildSession.unheard}). */
  readonly onChange?: () => void;
  /** True for a key withdrawn before its utterance was queued (a message deleted while Herald was away). */
  readonly withdrawn?: (key: string) => boolean;
  /** The process's start gate (see {@link SpeechQueueOptions.startGate}); none: every start goes at once. */
  readonly startGate?: StartGate;
  /** The process's count of characters queued and not yet reserved (see {@link SpeechQueueOptions.tally}). */
  readonly tally?: QueuedTally;
}

/** One Opus frame, and one tick of the audio player. */
const FRAME_MS = 20;
/** Silence between two queued utterances when the session is given none (the configuration's default). */
const DEFAULT_PAUSE_MS = 120;
/** How soon an idle session that stayed while joins waited tries to leave again. */
const IDLE_LEAVE_RETRY_MS = 10_000;

/**
 * The player drops a resource after this many 20 ms ticks without a frame, silently: the member is told nothing. The
 * TTS client's idle timeout ends a dead stream first, with an error the member is told ("took too long"): this is
 * 5 s longer than its default (it was 250 frames, 5 s, half the idle timeout, and a stream that stopped mid-utterance
 * was cut without a word). Far above MAX_REBUFFER_FRAMES (src/audio/resource.ts): a resource that ran dry holds that
 * many at most before it plays on.
 */
const MAX_MISSED_FRAMES = (DEFAULT_TIMEOUTS.idleMs + 5_000) / FRAME_MS;
/** How long an utterance waits for DAVE's end-to-end encryption (a re-key included) before it is given up. */
const E2EE_READY_TIMEOUT_MS = 6_000;

/**
 * One server's voice: a connection (a {@link VoiceLink}, which keeps the reconnect policy), a player and a
 * {@link SpeechQueue}. The queue decides what to pay for and when; the session turns the link's reports into "can
 * play" and "ended", and the player's state into "started" and "finished".
 */
export class GuildSession {
  readonly guildId: string;
  readonly player: AudioPlayer;
  readonly #options: GuildSessionOptions;
  readonly #logger: Logger;
  readonly #queue: SpeechQueue;
  readonly #link: VoiceLink;
  #idleTimer: NodeJS.Timeout | undefined;
  #ended: SessionEnd | undefined;
  /** The voice link can play (connected, or about to be). */
  #linkCanPlay = false;
  /** A moderator server-muted Herald: nobody would hear it. */
  #muted = false;
  #mutedTimer: NodeJS.Timeout | undefined;
  #unguard: () => void = () => {};
  /** What the player was last given. */
  #resource: AudioResource | undefined;
  /**
   * Frames of silence that make the configured pause: the player starts the next utterance one 20 ms tick after
   * the last frame of the one before, so that tick is part of the pause.
   */
  readonly #pauseFrames: number;

  constructor(options: GuildSessionOptions) {
    this.guildId = options.guildId;
    this.#options = options;
    this.#logger = options.logger.child({ guild: options.guildId });
    this.#pauseFrames = Math.max(
      0,
      Math.round(((options.pauseMs ?? DEFAULT_PAUSE_MS) - FRAME_MS) / FRAME_MS),
    );
    this.player = createAudioPlayer({
      behaviors: {
        noSubscriber: NoSubscriberBehavior.Pause,
        maxMissedFrames: MAX_MISSED_FRAMES,
        maxFramesPerPacket: options.framesPerPacket ?? DEFAULT_FRAMES_PER_PACKET,
      },
    });
    this.#queue = new SpeechQueue({
      guildId: options.guildId,
      synthesize: options.synthesize,
      pacing: options.pacing,
      limits: options.limits,
      logger: this.#logger,
      play: (utterance, prepared) => {
        const resource = createSpeechResource(prepared.body, {
          format: prepared.result.format,
          metadata: utterance,
          logger: this.#logger,
          trailingSilenceFrames: Math.max(STOP_SILENCE_FRAMES, this.#pauseFrames),
          ...(prepared.result.durationS === undefined
            ? {}
            : { durationMs: prepared.result.durationS * 1000 }),
          arrivedAt: (offset) => prepared.body.arrivedAt(offset),
          onSlowStart: () => {
            utterance.slowStart = true;
          },
        });
        // The player reports a failed stream as an AudioPlayerError that keeps the error's name and message but not
        // its class or code, so the member would be told of "something wrong on my side" for audio the service cut
        // short (an Ogg page the demuxer never saw end). The error itself, kept here, says whose it was; this listener
        // runs before the player's, which play() adds.
        resource.playStream.once('error', (error) => {
          utterance.streamError ??= error;
        });
        this.#resource = resource;
        this.player.play(resource);
      },
      // The silence frames after an utterance tell the listeners' decoders that transmission pauses (Discord asks
      // for five); when the next utterance is ready to follow, the silence is the configured pause instead.
      onNextReady: () => {
        if (this.#resource) setTrailingSilence(this.#resource, this.#pauseFrames);
      },
      // With DAVE negotiated and a member listening, the first frame must leave end-to-end encrypted.
      beforePlay: async (utterance) => {
        const startedAt = performance.now();
        const e2ee = await awaitE2eeReady(this.connection, {
          othersPresent: () => options.othersPresent?.() ?? false,
          ...(options.membersPresent ? { membersPresent: options.membersPresent } : {}),
          timeoutMs: E2EE_READY_TIMEOUT_MS,
          signal: utterance.abort.signal,
        });
        this.#logger.debug('e2ee gate', {
          outcome: e2ee.kind === 'not-needed' ? e2ee.reason : e2ee.kind,
          waitedMs: Math.round((performance.now() - startedAt) * 10) / 10,
        });
        if (e2ee.kind === 'timed-out') {
          throw new UserFacingError(
            'Discord’s end-to-end encryption for this voice call did not get ready in time, so I did not play it. Try again in a moment.',
          );
        }
      },
      stopPlayback: () => this.player.stop(true),
      onEmpty: () => this.#armIdleTimer(),
      ...(options.startGate ? { startGate: options.startGate } : {}),
      ...(options.tally ? { tally: options.tally } : {}),
      ...(options.onChange ? { onChange: options.onChange } : {}),
      ...(options.onUnplayed ? { onUnplayed: options.onUnplayed } : {}),
    });
    this.#link = new VoiceLink({
      guildId: options.guildId,
      channelId: options.channelId,
      adapterCreator: options.adapterCreator,
      logger: this.#logger,
      ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
      ...(options.maxRejoins === undefined ? {} : { maxRejoins: options.maxRejoins }),
      ...(options.joinQueue ? { joinQueue: options.joinQueue } : {}),
      onCanPlay: (canPlay) => {
        this.#linkCanPlay = canPlay;
        this.#queue.setCanPlay(canPlay && !this.#muted);
      },
      onLost: (reason) => this.end(reason),
    });
    this.connection.subscribe(this.player);
    // Mid-utterance, a DAVE re-key pauses the player rather than let frames out without E2EE.
    this.#unguard = guardE2ee(this.connection, this.player, {
      othersPresent: () => this.#options.othersPresent?.() ?? false,
      timeoutMs: E2EE_READY_TIMEOUT_MS,
    });
    this.player.on('stateChange', (oldState, newState) => this.#onPlayerState(oldState, newState));
    this.player.on('error', (error) => this.#onPlayerError(error));
    this.#armIdleTimer();
  }

  /** The server's voice connection. */
  get connection(): VoiceConnection {
    return this.#link.connection;
  }

  /** The voice channel Herald is in (or joining). */
  get channelId(): string | null {
    return this.#link.channelId;
  }

  /** How long, in ms, until Herald can speak in the channel (see {@link VoiceLink.joinWaitMs}); 0: now. */
  joinWaitMs(): number {
    return this.#link.joinWaitMs();
  }

  /** True once the session has ended; an ended session accepts nothing. */
  get ended(): boolean {
    return this.#ended !== undefined;
  }

  /** Utterances not yet finished, the one playing included. */
  get pending(): number {
    return this.#queue.pending;
  }

  /** What is still to be heard, in order (not yet handed to the player). */
  unheard(options: { includePlaying?: boolean } = {}): SpeechRequest[] {
    return this.#queue.unheard(options);
  }

  /** Queues an utterance; refused when the server's or the member's queue is full. */
  enqueue(request: SpeechRequest): EnqueueOutcome {
    if (this.#ended) throw new Error('enqueue on an ended voice session');
    // Queued and withdrawn in the same moment: its deletion arrived first.
    if (request.key !== undefined && this.#options.withdrawn?.(request.key)) {
      this.#logger.debug('an utterance withdrawn before it was queued is not queued', { key: request.key });
      return { kind: 'queued', ahead: this.pending };
    }
    const outcome = this.#queue.enqueue(request);
    if (outcome.kind === 'queued') clearTimeout(this.#idleTimer);
    return outcome;
  }

  /** Skips the utterance due now; false when there is none. */
  skip(): boolean {
    return this.#queue.skip();
  }

  /** Drops a queued utterance that has not started playing (e.g. its message was deleted). */
  withdraw(key: string): boolean {
    return this.#queue.withdraw(key);
  }

  /** Plays out what is already paid for and pays for nothing more (see {@link SpeechQueue.drain}). */
  drain(): Promise<void> {
    return this.#queue.drain();
  }

  /** Puts an edited request in place of the waiting one with its key, unless its synthesis has begun. */
  replace(request: SpeechRequest): boolean {
    return this.#queue.replace(request);
  }

  /** Clears the queue and stops the current utterance; returns how many were dropped. */
  stop(): number {
    return this.#queue.stop('stop');
  }

  /** Ends the session: drops every utterance (paid ones are reported unplayed), leaves the channel, reports once. */
  /** True while nobody can hear Herald: a moderator server-muted it, or it sits in a stage's audience. */
  get muted(): boolean {
    return this.#muted;
  }

  /**
   * Herald was server-muted (or unmuted) by a moderator, or sits in a stage's audience (or was invited to speak). Muted, nobody hears it: no utterance starts, so nothing
   * more is paid (the one playing, already paid, ends), and nothing is dropped; the queue waits for as long as the
   * idle timeout, then the session ends as an idle one would. Unmuted, the queue goes on in order.
   */
  setMuted(muted: boolean): void {
    if (this.#ended || muted === this.#muted) return;
    this.#muted = muted;
    this.#logger.info(muted ? 'cannot be heard: the queue waits' : 'heard again: the queue goes on', {
      waiting: this.pending,
    });
    clearTimeout(this.#mutedTimer);
    if (muted) this.#mutedTimer = setTimeout(() => this.end('idle'), this.#options.idleTimeoutMs);
    this.#queue.setCanPlay(this.#linkCanPlay && !muted);
  }

  end(reason: SessionEnd): void {
    if (this.#ended) return;
    this.#ended = reason;
    clearTimeout(this.#mutedTimer);
    this.#logger.info('voice session ended', { reason, dropped: this.pending });
    clearTimeout(this.#idleTimer);
    this.#queue.close(reason);
    this.#unguard();
    this.player.removeAllListeners('stateChange');
    this.player.stop(true);
    this.#link.close();
    this.#options.onEnd(reason);
  }

  #onPlayerState(oldState: AudioPlayerState, newState: AudioPlayerState): void {
    if (newState.status === AudioPlayerStatus.Idle && oldState.status !== AudioPlayerStatus.Idle) {
      this.#queue.finished(oldState.resource.metadata as Utterance);
    } else if (newState.status === AudioPlayerStatus.Playing) {
      clearTimeout(this.#idleTimer);
      const resource = newState.resource;
      this.#queue.started(resource.metadata as Utterance, () => resource.playbackDuration);
    }
  }

  #onPlayerError(error: AudioPlayerError): void {
    const utterance = error.resource.metadata as Utterance;
    const cause = utterance.streamError ?? error;
    this.#logger.warn('playback failed', { err: cause });
    if (!utterance.dropped) utterance.request.onFailure(cause);
  }

  #armIdleTimer(delayMs = this.#options.idleTimeoutMs): void {
    clearTimeout(this.#idleTimer);
    if (this.#ended || this.pending > 0) return;
    this.#idleTimer = setTimeout(() => {
      // While members wait for Herald to join them, an idle session stays (it costs nothing): its leave would wait
      // behind their joins anyway, and a member who speaks again meanwhile is heard without a join of their own.
      if ((this.#options.joinQueue?.waiting ?? 0) > 0) this.#armIdleTimer(IDLE_LEAVE_RETRY_MS);
      else this.end('idle');
    }, delayMs);
  }
}
