/**
 * The emulated voice server's media side: the UDP socket every voice session sends its RTP packets to (read on a
 * thread of its own, see udp-receiver.ts), each packet matched to its session by SSRC, authenticated and decrypted
 * with the session's transport key, handed to the members (DAVE) and captured. The voice gateway (voice.ts) keeps the
 * sessions; this side only reads them.
 */

import { packetDurationMs, splitOpusFrames } from '../support/audio.ts';
import { type DaveMedia, isE2ee } from './dave-media.ts';
import { isVoicePacket } from './ip-discovery.ts';
import { decryptRtp, type EncryptionMode, openRtp, rtpSession, type TransportKey } from './rtp.ts';
import { type HeldSummary, startUdpReceiver } from './udp-receiver.ts';

/** One RTP packet as the emulator received it, and what the members in the channel made of it. */
export interface CapturedFrame {
  /** The Opus frame the members heard (the first listener's decryption), else the transport payload. */
  readonly opus: Buffer;
  /** The payload inside transport encryption (DAVE ciphertext when `e2ee`). */
  readonly payload: Buffer;
  /** The payload carries DAVE end-to-end encryption. */
  readonly e2ee: boolean;
  /** DAVE was negotiated for the session when the frame arrived. */
  readonly dave: boolean;
  /** The transport encryption mode the session selected (voice op 1), in which the frame was decrypted. */
  readonly mode: EncryptionMode;
  /** Per member in the channel: whether they decrypted the frame, with davey's error kind when not. */
  readonly listeners: ReadonlyMap<
    string,
    { readonly ok: true } | { readonly ok: false; readonly error: string }
  >;
  /** `performance.now()` when the datagram arrived. */
  readonly receivedAt: number;
  readonly ssrc: number;
  readonly seq: number;
  readonly timestamp: number;
  /** The 3-byte Opus silence frame `F8 FF FE` that @discordjs/voice sends after a clip. */
  readonly silence: boolean;
}

/** A voice session as the media side sees it. */
export interface MediaSession {
  readonly guildId: string;
  readonly ssrc: number;
  readonly transport: TransportKey | undefined;
}

/** Options of {@link startVoiceMedia}. */
export interface VoiceMediaOptions {
  /** The voice gateway's live sessions by SSRC. */
  readonly sessions: ReadonlyMap<number, MediaSession>;
  /** Told of every frame captured, in its guild. */
  readonly events: { onFrame(guildId: string, frame: CapturedFrame): void };
  readonly dave: DaveMedia;
  /** False: frames are captured on arrival and no member decrypts them. */
  readonly membersDecrypt: () => boolean;
  /** The receiving thread's nice value; undefined leaves it as the process's. */
  readonly receiverNice?: number | undefined;
}

/** The media side of the voice server. */
export interface VoiceMedia {
  /** The UDP port sessions send to. */
  readonly port: number;
  /** The receiving thread's nice value as set, or why it could not be. */
  readonly receiverNice: number | string | undefined;
  /** Packets that failed to decrypt or matched no session (should stay 0). */
  readonly rejected: { count: number };
  /** Packets lost on purpose by {@link VoiceMedia.loseUdp} so far. */
  readonly lost: { count: number };
  /** Loses this share (0–1) of the guild's incoming audio packets, as a lossy network would (0: none). */
  loseUdp(guildId: string, share: number): void;
  /**
   * The gateway replaces or ends a session (before it leaves `sessions`): while packets are held, its SSRC and key
   * stay known for the packets it sent before.
   */
  retire(session: MediaSession): void;
  setNap(ms: number): void;
  hold(reader?: string): void;
  held(): Promise<HeldSummary>;
  release(): Promise<void>;
  close(): Promise<void>;
}

// A receive buffer of 4 MiB (the kernel caps it at net.core.rmem_max): with hundreds of streams, the default
// 208 KiB holds about 300 packets, and any pause of the receiving thread of a few milliseconds would drop packets
// that a voice server would have received.
const RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;
const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);

/** The listeners of a frame captured on arrival only (no member decrypted it). */
const NOBODY_DECRYPTED: CapturedFrame['listeners'] = new Map();

/**
 * A frame captured on arrival with no member decrypting it, for benchmarks of hundreds of streams: its header is
 * read at once and its transport encryption authenticated and removed when its payload is first read (usually
 * after the run), so the work is not done on the emulator's thread while the streams it times are playing. A
 * packet that does not authenticate then counts in `rejected` and reads as an empty payload.
 */
class SealedFrame implements CapturedFrame {
  readonly listeners = NOBODY_DECRYPTED;
  readonly receivedAt: number;
  readonly ssrc: number;
  readonly seq: number;
  readonly timestamp: number;
  readonly dave: boolean;
  // Until it is opened: the datagram and its session's key. Nothing else is kept per frame.
  #packet: Buffer | undefined;
  readonly #transport: TransportKey;
  #payload: Buffer | undefined;
  readonly #rejected: { count: number };

  constructor(
    packet: Buffer,
    receivedAt: number,
    transport: TransportKey,
    dave: boolean,
    rejected: { count: number },
  ) {
    this.receivedAt = receivedAt;
    this.ssrc = packet.readUInt32BE(8);
    this.seq = packet.readUInt16BE(2);
    this.timestamp = packet.readUInt32BE(4);
    this.dave = dave;
    this.#packet = packet;
    this.#transport = transport;
    this.#rejected = rejected;
  }

  get mode(): EncryptionMode {
    return this.#transport.mode;
  }

  get payload(): Buffer {
    if (this.#payload === undefined) {
      const payload = this.#packet && openRtp(this.#packet, this.#transport);
      if (payload === undefined) this.#rejected.count += 1;
      this.#payload = payload ?? Buffer.alloc(0);
      this.#packet = undefined;
    }
    return this.#payload;
  }

  get opus(): Buffer {
    return this.payload;
  }

  get e2ee(): boolean {
    return isE2ee(this.payload);
  }

  get silence(): boolean {
    return this.payload.equals(SILENCE);
  }
}

/** Opens the UDP socket and starts reading it. */
export async function startVoiceMedia(options: VoiceMediaOptions): Promise<VoiceMedia> {
  // While the receiving thread holds packets, a session that is replaced or ends keeps its SSRC and key here for
  // the packets it sent before, which are captured only when released.
  let holding = false;
  const retired = new Map<number, { readonly guildId: string; readonly transport: TransportKey }>();
  const rejected = { count: 0 };
  const lost = { count: 0 };
  const losses = new Map<string, number>();
  const sessionOf = (ssrc: number) => options.sessions.get(ssrc) ?? retired.get(ssrc);
  const isLost = (guildId: string): boolean => {
    const loss = losses.get(guildId) ?? 0;
    if (loss > 0 && Math.random() < loss) {
      lost.count += 1;
      return true;
    }
    return false;
  };
  const onPacket = (message: Buffer, receivedAt: number, held: boolean): void => {
    // 8-byte keepalives need no answer.
    if (!isVoicePacket(message)) return;
    // Held packets are captured as they would have been on arrival, when members did not decrypt (the bench's).
    if (held || !options.membersDecrypt()) {
      // Nobody decrypts: the packet is captured as it arrived and authenticated when first read (see SealedFrame).
      const session = rtpSession(message, sessionOf);
      if (!session) {
        rejected.count += 1;
        return;
      }
      if (isLost(session.guildId)) return;
      const dave = options.dave.group(session.guildId) !== undefined;
      options.events.onFrame(
        session.guildId,
        new SealedFrame(message, receivedAt, session.transport, dave, rejected),
      );
      return;
    }
    const frame = decryptRtp(message, sessionOf, receivedAt);
    if (!frame) {
      rejected.count += 1;
      return;
    }
    if (isLost(frame.guildId)) return;
    // Members decrypt off this thread; a guild's hearings resolve in the order its frames arrived.
    options.dave
      .hear(frame.guildId, frame.payload)
      .then((heard) => {
        const first = [...heard.listeners.values()].find((r) => r.ok);
        const opus = first?.ok ? first.opus : frame.payload;
        const listeners: CapturedFrame['listeners'] = new Map(
          [...heard.listeners].map(([userId, r]) => [
            userId,
            r.ok ? { ok: true } : { ok: false, error: r.error },
          ]),
        );
        // A packet of several frames (a bot may send up to 120 ms in one) is captured as its frames, each when a
        // listener's decoder plays it: RTP timestamp and arrival advance by the frames before it.
        const frames = first?.ok ? splitOpusFrames(opus) : [opus];
        let offsetMs = 0;
        for (const part of frames) {
          options.events.onFrame(frame.guildId, {
            ...frame.frame,
            receivedAt: frame.frame.receivedAt + offsetMs,
            timestamp: (frame.frame.timestamp + offsetMs * 48) % 2 ** 32,
            mode: frame.mode,
            opus: part,
            payload: frame.payload,
            e2ee: heard.e2ee,
            dave: heard.dave,
            listeners,
            silence: frames.length === 1 ? frame.payload.equals(SILENCE) : part.equals(SILENCE),
          });
          if (frames.length > 1) offsetMs += packetDurationMs(part);
        }
      })
      .catch((error: unknown) => {
        // A capture listener that throws fails as it would in the socket's own handler.
        setImmediate(() => {
          throw error;
        });
      });
  };
  const udp = await startUdpReceiver(RECEIVE_BUFFER_BYTES, onPacket, options.receiverNice);
  return {
    port: udp.port,
    receiverNice: udp.nice,
    rejected,
    lost,
    loseUdp: (guildId, share) => {
      if (share > 0) losses.set(guildId, Math.min(1, share));
      else losses.delete(guildId);
    },
    retire: (session) => {
      if (holding && session.transport)
        retired.set(session.ssrc, { guildId: session.guildId, transport: session.transport });
    },
    setNap: (ms) => udp.setNap(ms),
    hold: (reader) => {
      holding = true;
      udp.hold(reader);
    },
    held: () => udp.held(),
    release: async () => {
      await udp.release();
      holding = false;
      retired.clear();
    },
    close: () => udp.close(),
  };
}
