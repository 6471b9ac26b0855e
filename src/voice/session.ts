import { PassThrough, type Readable } from 'node:stream';
import {
  type AudioPlayer,
  type AudioPlayerError,
  type AudioPlayerState,
  AudioPlayerStatus,
  createAudioPlayer,
  type DiscordGatewayAdapterCreator,
  entersState,
  joinVoiceChannel,
  NoSubscriberBehavior,
  type VoiceConnection,
  VoiceConnectionDisconnectReason,
  type VoiceConnectionState,
  VoiceConnectionStatus,
} from '@discordjs/voice';
import { createSpeechResource } from '../audio/resource.ts';
import type { Logger } from '../log.ts';
import type { GenerateResult, Speaker } from '../tts/index.ts';

/** One thing a member asked Herald to say. */
export interface SpeechRequest {
  readonly text: string;
  readonly speaker: Speaker;
  /** The service's variability (0.5–2.0); undefined leaves the service's default. */
  readonly temperature?: number;
  readonly requestedBy: { readonly id: string; readonly name: string };
  /** Identifies the source (e.g. a message id) so it can be withdrawn with {@link GuildSession.withdraw}. */
  readonly key?: string;
  /** Told, once, when this utterance could not be spoken; never called for a skip or stop. */
  readonly onFailure: (error: unknown) => void;
}

/** Asks the TTS service for speech for `guildId` (whose budget pays); rejects on failure; honours `signal`. */
export type Synthesize = (
  request: SpeechRequest,
  signal: AbortSignal,
  guildId: string,
) => Promise<GenerateResult>;

/** Why a session ended; each maps to what Herald tells the server. */
export type SessionEnd =
  | 'left'
  | 'idle'
  | 'alone'
  | 'kicked'
  | 'channel-deleted'
  | 'removed'
  | 'connection-failed'
  | 'connection-lost'
  | 'shutdown';

/** Options of {@link GuildSession}. */
export interface GuildSessionOptions {
  readonly guildId: string;
  readonly channelId: string;
  readonly adapterCreator: DiscordGatewayAdapterCreator;
  readonly synthesize: Synthesize;
  readonly logger: Logger;
  /** Leave after this long with nothing queued. */
  readonly idleTimeoutMs: number;
  /** Called once when the session is over, after its clean-up. */
  readonly onEnd: (reason: SessionEnd) => void;
  /** How many queued utterances are synthesised ahead of the one playing. Default 2. */
  readonly lookAhead?: number;
  /** Give up when voice is not ready this long after joining or losing the connection. Default 15 s. */
  readonly connectTimeoutMs?: number;
  /** Rejoins allowed within two minutes before giving up. Default 4. */
  readonly maxRejoins?: number;
}

interface Utterance {
  readonly request: SpeechRequest;
  readonly abort: AbortController;
  audio: Promise<Prepared> | undefined;
  /** What broke the audio stream, kept because the player's error carries only the message. */
  streamError?: unknown;
}

interface Prepared {
  readonly result: GenerateResult;
  /** The response body, read ahead into memory so the next utterance is ready the moment this one is due. */
  readonly body: Readable;
}

/** Opus speech runs at roughly 3 KiB/s: 8 MiB holds far more than any utterance, so read-ahead never stalls. */
const READ_AHEAD_BYTES = 8 * 1024 * 1024;
/** The player drops a resource after this many 20 ms ticks without a frame; the TTS client's idle timeout, which
 *  ends a dead stream with a clear error, is meant to fire first. */
const MAX_MISSED_FRAMES = 250;
const REJOIN_WINDOW_MS = 120_000;
/** How long a 4014 close waits for the new channel's server update before calling it a kick. */
const MOVE_GRACE_MS = 5_000;

/**
 * One server's voice: a connection, a player and a FIFO queue. Plays strictly in request order, synthesising a
 * few utterances ahead so they follow each other without a gap. The reconnect policy lives here, once.
 */
export class GuildSession {
  readonly guildId: string;
  readonly connection: VoiceConnection;
  readonly player: AudioPlayer;
  readonly #options: GuildSessionOptions;
  readonly #logger: Logger;
  #waiting: Utterance[] = [];
  #current: Utterance | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #connectTimer: NodeJS.Timeout | undefined;
  #rejoins: number[] = [];
  #pendingRejoinDelayMs = 0;
  #everReady = false;
  #ended: SessionEnd | undefined;

  constructor(options: GuildSessionOptions) {
    this.guildId = options.guildId;
    this.#options = options;
    this.#logger = options.logger.child({ guild: options.guildId });
    this.player = createAudioPlayer({
      behaviors: { noSubscriber: NoSubscriberBehavior.Pause, maxMissedFrames: MAX_MISSED_FRAMES },
    });
    this.connection = joinVoiceChannel({
      guildId: options.guildId,
      channelId: options.channelId,
      adapterCreator: this.#withRejoinBackoff(options.adapterCreator),
      selfDeaf: true,
      selfMute: false,
      daveEncryption: true,
    });
    this.connection.subscribe(this.player);
    this.connection.on('stateChange', (oldState, newState) => this.#onConnectionState(oldState, newState));
    this.connection.on('error', (error) => this.#logger.warn('voice connection error', { err: error }));
    this.player.on('stateChange', (oldState, newState) => this.#onPlayerState(oldState, newState));
    this.player.on('error', (error) => this.#onPlayerError(error));
    this.#armConnectTimer();
    this.#armIdleTimer();
  }

  /** The voice channel Herald is in (or joining). */
  get channelId(): string | null {
    return this.connection.joinConfig.channelId;
  }

  /** True once the session has ended; an ended session accepts nothing. */
  get ended(): boolean {
    return this.#ended !== undefined;
  }

  /** Utterances not yet finished, the one playing included. */
  get pending(): number {
    return this.#waiting.length + (this.#current ? 1 : 0);
  }

  /** Queues an utterance; `ahead` is how many are before it (0: it is next or playing now). */
  enqueue(request: SpeechRequest): { ahead: number } {
    if (this.#ended) throw new Error('enqueue on an ended voice session');
    const ahead = this.pending;
    this.#waiting.push({ request, abort: new AbortController(), audio: undefined });
    clearTimeout(this.#idleTimer);
    this.#playNext();
    this.#prefetch();
    return { ahead };
  }

  /** Skips the utterance playing now; false when nothing is. */
  skip(): boolean {
    const current = this.#current;
    if (!current) return false;
    current.abort.abort();
    // The player goes idle (or the pending synthesis rejects as aborted); either path moves to the next item.
    this.player.stop(true);
    return true;
  }

  /**
   * Drops a queued utterance that has not started playing (e.g. its message was deleted); aborts its synthesis.
   * Returns false when no waiting utterance has that key.
   */
  withdraw(key: string): boolean {
    const index = this.#waiting.findIndex((utterance) => utterance.request.key === key);
    const [utterance] = index === -1 ? [] : this.#waiting.splice(index, 1);
    utterance?.abort.abort();
    if (utterance) this.#prefetch();
    return utterance !== undefined;
  }

  /** Clears the queue and stops the current utterance; returns how many were dropped. */
  stop(): number {
    const dropped = this.#waiting.length + (this.#current ? 1 : 0);
    for (const utterance of this.#waiting.splice(0)) utterance.abort.abort();
    this.skip();
    return dropped;
  }

  /** Ends the session: aborts every request in flight, leaves the channel, reports `reason` once. */
  end(reason: SessionEnd): void {
    if (this.#ended) return;
    this.#ended = reason;
    this.#logger.info('voice session ended', { reason, dropped: this.pending });
    clearTimeout(this.#idleTimer);
    clearTimeout(this.#connectTimer);
    this.stop();
    this.player.removeAllListeners('stateChange');
    if (this.connection.state.status !== VoiceConnectionStatus.Destroyed) this.connection.destroy();
    this.#options.onEnd(reason);
  }

  #playNext(): void {
    if (this.#current || this.#ended) return;
    const next = this.#waiting.shift();
    if (!next) {
      this.#armIdleTimer();
      return;
    }
    this.#current = next;
    void this.#start(next);
  }

  #prefetch(): void {
    const lookAhead = this.#options.lookAhead ?? 2;
    const due = [this.#current, ...this.#waiting.slice(0, lookAhead)];
    for (const utterance of due) {
      if (utterance && !utterance.audio) utterance.audio = this.#prepare(utterance);
    }
  }

  #prepare(utterance: Utterance): Promise<Prepared> {
    const prepared = this.#options
      .synthesize(utterance.request, utterance.abort.signal, this.guildId)
      .then((result) => {
        const body = new PassThrough({ highWaterMark: READ_AHEAD_BYTES });
        result.audio.on('error', (error) => {
          utterance.streamError = error;
          body.destroy(error);
        });
        result.audio.pipe(body);
        return { result, body };
      });
    // Awaited later by #start; this keeps a failure of an utterance that is stopped first from going unhandled.
    prepared.catch(() => {});
    return prepared;
  }

  async #start(utterance: Utterance): Promise<void> {
    try {
      utterance.audio ??= this.#prepare(utterance);
      const { result, body } = await utterance.audio;
      if (this.#current !== utterance || utterance.abort.signal.aborted) {
        body.destroy();
        return;
      }
      const resource = createSpeechResource(body, {
        format: result.format,
        metadata: utterance,
        logger: this.#logger,
      });
      this.player.play(resource);
    } catch (error) {
      if (!utterance.abort.signal.aborted) utterance.request.onFailure(error);
      if (this.#current === utterance) {
        this.#current = undefined;
        this.#playNext();
      }
    } finally {
      this.#prefetch();
    }
  }

  #onPlayerState(oldState: AudioPlayerState, newState: AudioPlayerState): void {
    if (newState.status === AudioPlayerStatus.Idle && oldState.status !== AudioPlayerStatus.Idle) {
      const finished = oldState.resource.metadata as Utterance;
      // Releases the HTTP stream if the player gave up on the resource early.
      finished.abort.abort();
      if (this.#current === finished) this.#current = undefined;
      this.#playNext();
      this.#prefetch();
    } else if (newState.status === AudioPlayerStatus.Playing) {
      clearTimeout(this.#idleTimer);
    }
  }

  #onPlayerError(error: AudioPlayerError): void {
    const utterance = error.resource.metadata as Utterance;
    const cause = utterance.streamError ?? error;
    this.#logger.warn('playback failed', { err: cause });
    if (!utterance.abort.signal.aborted) utterance.request.onFailure(cause);
  }

  #onConnectionState(oldState: VoiceConnectionState, newState: VoiceConnectionState): void {
    this.#logger.debug('voice connection state', { from: oldState.status, to: newState.status });
    switch (newState.status) {
      case VoiceConnectionStatus.Ready:
        this.#everReady = true;
        clearTimeout(this.#connectTimer);
        break;
      case VoiceConnectionStatus.Signalling:
        // The library rejoins by itself after any close but 4014 (see #withRejoinBackoff for the pacing).
        if (
          oldState.status === VoiceConnectionStatus.Ready ||
          oldState.status === VoiceConnectionStatus.Connecting
        ) {
          this.#recordRejoin();
        }
        this.#armConnectTimer();
        break;
      case VoiceConnectionStatus.Disconnected:
        if (
          newState.reason === VoiceConnectionDisconnectReason.WebSocketClose &&
          newState.closeCode === 4014
        ) {
          // 4014: moved to another channel (a new server update follows) or kicked (nothing follows).
          void this.#awaitMove();
        } else if (newState.reason !== VoiceConnectionDisconnectReason.Manual) {
          this.#recordRejoin();
          if (!this.#ended) this.connection.rejoin();
        }
        break;
      case VoiceConnectionStatus.Destroyed:
        this.end(this.#everReady ? 'connection-lost' : 'connection-failed');
        break;
      case VoiceConnectionStatus.Connecting:
        break;
    }
  }

  async #awaitMove(): Promise<void> {
    try {
      await Promise.race([
        entersState(this.connection, VoiceConnectionStatus.Signalling, MOVE_GRACE_MS),
        entersState(this.connection, VoiceConnectionStatus.Connecting, MOVE_GRACE_MS),
      ]);
      this.#armConnectTimer();
    } catch {
      this.end('kicked');
    }
  }

  #recordRejoin(): void {
    const now = Date.now();
    this.#rejoins = this.#rejoins.filter((at) => now - at < REJOIN_WINDOW_MS);
    this.#rejoins.push(now);
    if (this.#rejoins.length > (this.#options.maxRejoins ?? 4)) {
      // The library is mid-way through its own rejoin (it sends the join right after this state change), and
      // destroying the connection inside its state change would make it use the destroyed state: swallow that
      // join in the adapter and end once the library's call has returned.
      this.#pendingRejoinDelayMs = Number.POSITIVE_INFINITY;
      setImmediate(() => this.end('connection-lost'));
      return;
    }
    this.#pendingRejoinDelayMs = Math.min(500 * 2 ** (this.#rejoins.length - 1), 8_000);
    this.#logger.warn('voice connection lost; rejoining', {
      attempt: this.#rejoins.length,
      delayMs: this.#pendingRejoinDelayMs,
    });
  }

  /**
   * @discordjs/voice answers a voice close (other than 4014) by sending a new join at once, in a tight loop when
   * the close repeats (a 4017 looped 114 times in 435 ms). Wrapping the adapter is the one place where that join
   * can be paced: it is held for the backoff {@link #recordRejoin} set just before the library sends it.
   */
  #withRejoinBackoff(creator: DiscordGatewayAdapterCreator): DiscordGatewayAdapterCreator {
    return (methods) => {
      const adapter = creator(methods);
      let held: NodeJS.Timeout | undefined;
      return {
        sendPayload: (payload) => {
          const delay = this.#pendingRejoinDelayMs;
          this.#pendingRejoinDelayMs = 0;
          clearTimeout(held);
          const joining = (payload as { d?: { channel_id?: unknown } }).d?.channel_id != null;
          if (!joining || delay === 0) return adapter.sendPayload(payload);
          if (delay === Number.POSITIVE_INFINITY) return true;
          held = setTimeout(() => {
            if (!this.#ended) adapter.sendPayload(payload);
          }, delay);
          return true;
        },
        destroy: () => {
          clearTimeout(held);
          adapter.destroy();
        },
      };
    };
  }

  #armConnectTimer(): void {
    clearTimeout(this.#connectTimer);
    this.#connectTimer = setTimeout(() => {
      if (this.connection.state.status !== VoiceConnectionStatus.Ready) {
        this.end(this.#everReady ? 'connection-lost' : 'connection-failed');
      }
    }, this.#options.connectTimeoutMs ?? 15_000);
  }

  #armIdleTimer(): void {
    clearTimeout(this.#idleTimer);
    if (this.#ended || this.pending > 0) return;
    this.#idleTimer = setTimeout(() => this.end('idle'), this.#options.idleTimeoutMs);
  }
}
