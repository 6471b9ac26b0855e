import {
  type DiscordGatewayAdapterCreator,
  entersState,
  joinVoiceChannel,
  type VoiceConnection,
  VoiceConnectionDisconnectReason,
  type VoiceConnectionState,
  VoiceConnectionStatus,
} from '@discordjs/voice';
import type { Logger } from '../log.ts';
import type { JoinQueue, QueuedJoin } from './join-queue.ts';

/** How a voice connection ended for good, from Herald's side (a session's end besides its own choices). */
export type ConnectionLoss = 'connection-failed' | 'connection-lost' | 'kicked';

/** Options of {@link VoiceLink}. */
export interface VoiceLinkOptions {
  readonly guildId: string;
  readonly channelId: string;
  readonly adapterCreator: DiscordGatewayAdapterCreator;
  readonly logger: Logger;
  /** Give up when voice is not ready this long after joining or losing the connection. Default 15 s. */
  readonly connectTimeoutMs?: number;
  /** Rejoins allowed within two minutes before giving up. Default 4. */
  readonly maxRejoins?: number;
  /** Paces this link's joins with every other server's under the gateway rate; none: joins are sent at once. */
  readonly joinQueue?: JoinQueue;
  /**
   * Told at every change of the connection whether audio may be paid for now: once Discord accepted the join
   * (ready, or connecting outside a burst of joins), since a connection then plays within a synthesis' time.
   */
  readonly onCanPlay: (canPlay: boolean) => void;
  /** Told once when the connection is gone for good; the link's owner then ends and calls {@link VoiceLink.close}. */
  readonly onLost: (reason: ConnectionLoss) => void;
}

/** What a member is told to expect when their join waits behind a burst of voice handshakes. */
const BURST_JOIN_WAIT_MS = 3_000;
const REJOIN_WINDOW_MS = 120_000;
/** How long a 4014 close waits for the new channel's server update before calling it a kick. */
const MOVE_GRACE_MS = 5_000;

/**
 * One server's voice connection and the reconnect policy, written once: joins paced by the shard's join queue, a
 * connect deadline that starts when the join is sent, rejoins backed off and counted, a move told from a kick. It
 * reports what its owner needs ("may pay now", "gone") and owns nothing else.
 */
export class VoiceLink {
  readonly connection: VoiceConnection;
  readonly #options: VoiceLinkOptions;
  readonly #logger: Logger;
  #connectTimer: NodeJS.Timeout | undefined;
  #rejoins: number[] = [];
  #pendingRejoinDelayMs = 0;
  /** The join waiting in the join queue, if any: the connect deadline starts once it is sent. */
  #queuedJoin: QueuedJoin | undefined;
  /** The last join sent through the join queue, whose handshake holds a slot there until it finishes. */
  #handshake: QueuedJoin | undefined;
  #everReady = false;
  #closed = false;

  constructor(options: VoiceLinkOptions) {
    this.#options = options;
    this.#logger = options.logger;
    this.connection = joinVoiceChannel({
      guildId: options.guildId,
      channelId: options.channelId,
      adapterCreator: this.#withRejoinBackoff(options.adapterCreator),
      selfDeaf: true,
      selfMute: false,
      daveEncryption: true,
    });
    this.connection.on('stateChange', (oldState, newState) => this.#onState(oldState, newState));
    this.connection.on('error', (error) => this.#logger.warn('voice connection error', { err: error }));
    this.#armConnectTimer();
  }

  /** The voice channel Herald is in (or joining). */
  get channelId(): string | null {
    return this.connection.joinConfig.channelId;
  }

  /**
   * How long, in ms, until Herald can speak in the channel: until the join waiting for the gateway rate is sent,
   * and under a burst of joins (see {@link JoinQueue.busy}) at least a few seconds while the connection is not
   * ready, since its handshake then waits its turn; 0 when it may speak now.
   */
  joinWaitMs(): number {
    const held = this.#queuedJoin ? Math.max(0, this.#queuedJoin.dueAt - Date.now()) : 0;
    const burst =
      this.connection.state.status !== VoiceConnectionStatus.Ready && this.#options.joinQueue?.busy === true;
    return burst ? Math.max(held, BURST_JOIN_WAIT_MS) : held;
  }

  /** Leaves the channel and frees the join queue's slot; reports nothing more. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#connectTimer);
    this.#handshake?.done();
    if (this.connection.state.status !== VoiceConnectionStatus.Destroyed) this.connection.destroy();
  }

  #lost(reason: ConnectionLoss): void {
    if (!this.#closed) this.#options.onLost(reason);
  }

  #onState(oldState: VoiceConnectionState, newState: VoiceConnectionState): void {
    if (this.#closed) return;
    this.#logger.debug('voice connection state', { from: oldState.status, to: newState.status });
    // Discord accepted the join once the connection is connecting: it is ready within a synthesis' time, so the
    // first utterance may be paid for then; before that (signalling), a join that never completes costs nothing.
    // Under a burst of joins a handshake can take long enough to fail: then nothing is paid before it is ready.
    this.#options.onCanPlay(
      newState.status === VoiceConnectionStatus.Ready ||
        (newState.status === VoiceConnectionStatus.Connecting && !this.#options.joinQueue?.busy),
    );
    switch (newState.status) {
      case VoiceConnectionStatus.Ready:
        this.#everReady = true;
        clearTimeout(this.#connectTimer);
        this.#handshake?.done();
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
          if (!this.#closed) this.connection.rejoin();
        }
        break;
      case VoiceConnectionStatus.Destroyed:
        this.#lost(this.#everReady ? 'connection-lost' : 'connection-failed');
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
      this.#lost('kicked');
    }
  }

  #recordRejoin(): void {
    const now = Date.now();
    this.#rejoins = this.#rejoins.filter((at) => now - at < REJOIN_WINDOW_MS);
    this.#rejoins.push(now);
    if (this.#rejoins.length > (this.#options.maxRejoins ?? 4)) {
      // The library is mid-way through its own rejoin (it sends the join right after this state change), and
      // destroying the connection inside its state change would make it use the destroyed state: swallow that
      // join in the adapter and give up once the library's call has returned.
      this.#pendingRejoinDelayMs = Number.POSITIVE_INFINITY;
      setImmediate(() => this.#lost('connection-lost'));
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
      const queue = this.#options.joinQueue;
      // A join goes through the shard's join queue (when there is one); its connect deadline starts when it is sent.
      const send = (payload: unknown): void => {
        if (this.#closed) return;
        if (!queue) {
          adapter.sendPayload(payload);
          return;
        }
        this.#queuedJoin?.cancel();
        this.#handshake?.done();
        const queued = queue.schedule(() => {
          this.#queuedJoin = undefined;
          if (this.#closed) return;
          adapter.sendPayload(payload);
          this.#armConnectTimer();
        }, this.#options.guildId);
        // Held (by the gateway's rate, or by the handshakes in flight): its send arms the connect deadline.
        if (!queued.sent) this.#queuedJoin = queued;
        // Its handshake holds one of the queue's slots until the connection is ready or the link closes.
        this.#handshake = queued;
      };
      return {
        sendPayload: (payload) => {
          const delay = this.#pendingRejoinDelayMs;
          this.#pendingRejoinDelayMs = 0;
          clearTimeout(held);
          const joining = (payload as { d?: { channel_id?: unknown } }).d?.channel_id != null;
          if (!joining) {
            // A leave: nobody waits for it, so it goes after the joins that members are waiting for.
            if (!queue) return adapter.sendPayload(payload);
            queue.leave(this.#options.guildId, () => adapter.sendPayload(payload));
            return true;
          }
          if (delay === Number.POSITIVE_INFINITY) return true;
          if (delay === 0) send(payload);
          else held = setTimeout(() => send(payload), delay);
          return true;
        },
        destroy: () => {
          clearTimeout(held);
          this.#queuedJoin?.cancel();
          this.#queuedJoin = undefined;
          adapter.destroy();
        },
      };
    };
  }

  #armConnectTimer(): void {
    clearTimeout(this.#connectTimer);
    // A join still waiting for the gateway rate has not asked Discord anything yet; its send arms the deadline.
    if (this.#queuedJoin) return;
    this.#connectTimer = setTimeout(() => {
      if (this.connection.state.status !== VoiceConnectionStatus.Ready) {
        this.#lost(this.#everReady ? 'connection-lost' : 'connection-failed');
      }
    }, this.#options.connectTimeoutMs ?? 15_000);
  }
}
