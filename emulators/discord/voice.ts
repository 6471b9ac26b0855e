import { randomBytes, randomInt } from 'node:crypto';
import https from 'node:https';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import type { DaveMedia } from './dave-media.ts';
import type { DaveEvent } from './dave-protocol.ts';
import { randomToken } from './model.ts';
import { AES_MODE, type EncryptionMode, type TransportKey, transportKey, XCHACHA_MODE } from './rtp.ts';
import type { HeldSummary, UdpReceiver } from './udp-receiver.ts';
import { type CapturedFrame, startVoiceMedia } from './voice-media.ts';

export type { CapturedFrame } from './voice-media.ts';

/** What the voice server reports to the emulator, per guild. */
export interface VoiceServerEvents {
  onFrame(guildId: string, frame: CapturedFrame): void;
  onSpeaking(guildId: string, speaking: number): void;
  onConnectedChange(guildId: string, connected: boolean): void;
}

/** Options of {@link createVoiceServer}. */
export interface VoiceServerOptions {
  readonly cert: string;
  readonly key: string;
  /** The voice HELLO's heartbeat interval; Discord uses 13750 ms. */
  readonly heartbeatIntervalMs: number;
  /** Offer XChaCha20-Poly1305 after AES-256-GCM, as Discord does; false offers AES-256-GCM only. */
  readonly xchacha: boolean;
  /** The receiving thread's nice value; undefined leaves it as the process's. */
  readonly receiverNice?: number;
  readonly events: VoiceServerEvents;
  /** The DAVE layer; DAVE is offered to clients announcing version 1 while `daveOffered()` is true. */
  readonly dave: DaveMedia;
  readonly daveOffered: () => boolean;
  /** False: frames are captured on arrival and no member decrypts them (see DiscordEmulatorOptions). */
  readonly membersDecrypt: () => boolean;
  /** Told when a session description (op 4) is sent, as a `session` event. */
  readonly onEvent?: (event: DaveEvent) => void;
}

/** The emulated voice server: voice gateway v8 over TLS plus the UDP media socket. */
export interface VoiceServer {
  /** `host:port` for VOICE_SERVER_UPDATE. */
  readonly endpoint: string;
  /** Issues a fresh voice token for the bot's join of `guildId` under gateway session `sessionId`. */
  allocate(guildId: string, userId: string, sessionId: string, channelId: string): string;
  /** Forgets the guild's allocation (the bot left) so a stale IDENTIFY or RESUME is refused. */
  release(guildId: string): void;
  /** Closes the guild's open voice websocket with `code`; false if none was open. */
  closeSocket(guildId: string, code: number, reason?: string): boolean;
  isConnected(guildId: string): boolean;
  dropHeartbeats(on: boolean): void;
  /** Holds READY (the answer to IDENTIFY) back by `ms` on every voice handshake (0: no delay). */
  delayHandshake(ms: number): void;
  /** Loses this share (0–1) of the guild's incoming audio packets, as a lossy network would (0: none). */
  loseUdp(guildId: string, share: number): void;
  /** Packets lost on purpose by {@link loseUdp} so far. */
  readonly lost: { count: number };
  /** Packets that failed to decrypt or matched no session (should stay 0). */
  readonly rejected: { count: number };
  /** Voice IDENTIFYs (fresh sessions) and RESUMEs accepted so far. */
  readonly handshakes: { identified: number; resumed: number };
  /** The receiving thread's nice value as set, or why it could not be; undefined when none was asked for. */
  readonly receiverNice: number | string | undefined;
  /** See {@link UdpReceiver.setNap}. */
  setReceiverNap(ms: number): void;
  /** See {@link DiscordEmulator.holdVoicePackets}. */
  holdPackets(reader?: string): void;
  heldPackets(): Promise<HeldSummary>;
  releasePackets(): Promise<void>;
  close(): Promise<void>;
}

interface Allocation {
  readonly guildId: string;
  readonly userId: string;
  readonly sessionId: string;
  readonly token: string;
  readonly channelId: string;
  /** The client's `max_dave_protocol_version`. */
  maxDave: number;
  ssrc: number;
  secretKey: Buffer | undefined;
  /** The selected mode and `secretKey` in its form, made once: the receiver decrypts every packet with it. */
  transport: TransportKey | undefined;
  seq: number;
  ws: WebSocket | undefined;
  connected: boolean;
}

const OP = {
  identify: 0,
  selectProtocol: 1,
  ready: 2,
  heartbeat: 3,
  sessionDescription: 4,
  speaking: 5,
  heartbeatAck: 6,
  resume: 7,
  hello: 8,
  resumed: 9,
};
/** Starts the voice server on 127.0.0.1 (random TLS and UDP ports). */
export async function createVoiceServer(options: VoiceServerOptions): Promise<VoiceServer> {
  const allocations = new Map<string, Allocation>();
  const bySsrc = new Map<number, Allocation>();
  // The UDP side reads the sessions by SSRC; a session replaced or ended is retired there first (held packets).
  const media = await startVoiceMedia({
    sessions: bySsrc,
    events: options.events,
    dave: options.dave,
    membersDecrypt: options.membersDecrypt,
    receiverNice: options.receiverNice,
  });
  const retire = (allocation: Allocation): void => {
    media.retire(allocation);
    bySsrc.delete(allocation.ssrc);
  };
  const handshakes = { identified: 0, resumed: 0 };
  const timers = new Set<NodeJS.Timeout>();
  let dropHeartbeats = false;
  let handshakeDelayMs = 0;
  // Discord's order, AES-256-GCM first: an unpatched @discordjs/voice takes the first listed mode it claims, and it
  // claims XChaCha even with no library to run it, then throws at the first frame (discord-protocol.md §6).
  // Herald's patch 004 makes it take XChaCha instead, only once sodium-native has loaded.
  const modes: readonly EncryptionMode[] = options.xchacha ? [AES_MODE, XCHACHA_MODE] : [AES_MODE];

  const https_ = https.createServer({ cert: options.cert, key: options.key });
  const wss = new WebSocketServer({ server: https_ });

  const later = (action: () => void): void => {
    if (handshakeDelayMs <= 0) {
      action();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      action();
    }, handshakeDelayMs);
    timers.add(timer);
  };

  const setConnected = (allocation: Allocation, connected: boolean): void => {
    if (allocation.connected === connected) return;
    allocation.connected = connected;
    options.events.onConnectedChange(allocation.guildId, connected);
  };

  const send = (
    allocation: Allocation | undefined,
    ws: WebSocket,
    payload: { op: number; d: unknown },
  ): void => {
    if (ws.readyState !== ws.OPEN) return;
    // v8: server frames carry a sequence number the client echoes as seq_ack.
    if (allocation && payload.op !== OP.heartbeatAck) {
      allocation.seq += 1;
      ws.send(JSON.stringify({ ...payload, seq: allocation.seq }));
    } else ws.send(JSON.stringify(payload));
  };

  /** Server binary frames: `[u16 seq][u8 op][payload]`, sharing the JSON frames' sequence counter. */
  const sendBinary = (allocation: Allocation, op: number, payload: Buffer): void => {
    const ws = allocation.ws;
    if (!ws || ws.readyState !== ws.OPEN) return;
    allocation.seq += 1;
    const head = Buffer.alloc(3);
    head.writeUInt16BE(allocation.seq & 0xffff);
    head.writeUInt8(op, 2);
    ws.send(Buffer.concat([head, payload]));
  };

  const onMessage = (ws: WebSocket, raw: RawData, isBinary: boolean, bound: { a?: Allocation }): void => {
    if (isBinary) {
      // Client binary frames are DAVE (MLS) messages: `[u8 op][payload]`.
      const bytes = Buffer.isBuffer(raw) ? raw : Buffer.concat(Array.isArray(raw) ? raw : [Buffer.from(raw)]);
      if (bound.a && bytes.length > 0)
        options.dave.onBinary(bound.a.guildId, bytes[0] ?? 0, bytes.subarray(1));
      return;
    }
    let packet: { op?: number; d?: Record<string, unknown> };
    try {
      packet = JSON.parse(String(raw)) as typeof packet;
    } catch {
      ws.close(4002, 'Failed to decode payload.');
      return;
    }
    const d = packet.d ?? {};
    switch (packet.op) {
      case OP.identify: {
        const allocation = allocations.get(String(d.server_id));
        if (!allocation || allocation.token !== d.token || allocation.sessionId !== d.session_id) {
          ws.close(4004, 'Authentication failed.');
          return;
        }
        if (allocation.ws && allocation.ws !== ws) allocation.ws.close(4006, 'Session no longer valid.');
        retire(allocation);
        allocation.ssrc = randomInt(1, 2 ** 31);
        allocation.secretKey = undefined;
        allocation.transport = undefined;
        allocation.seq = 0;
        allocation.maxDave = Number(d.max_dave_protocol_version ?? 0);
        allocation.ws = ws;
        bound.a = allocation;
        bySsrc.set(allocation.ssrc, allocation);
        handshakes.identified += 1;
        const address = { address: '127.0.0.1', port: media.port };
        const ready = (): void =>
          send(allocation, ws, {
            op: OP.ready,
            d: {
              ssrc: allocation.ssrc,
              ip: address.address,
              port: address.port,
              modes,
            },
          });
        // The client identifies as soon as the socket opens, so the handshake is held back at READY.
        later(ready);
        return;
      }
      case OP.selectProtocol: {
        const allocation = bound.a;
        if (!allocation) {
          ws.close(4003, 'Not authenticated.');
          return;
        }
        const data = (d.data ?? {}) as { mode?: string };
        const mode = modes.find((offered) => offered === data.mode);
        if (!mode) {
          ws.close(4016, 'Unknown encryption mode.');
          return;
        }
        allocation.secretKey = randomBytes(32);
        allocation.transport = transportKey(mode, allocation.secretKey);
        const daveVersion = options.daveOffered() && allocation.maxDave >= 1 ? 1 : 0;
        send(allocation, ws, {
          op: OP.sessionDescription,
          d: {
            mode,
            secret_key: [...allocation.secretKey],
            audio_codec: 'opus',
            video_codec: null,
            media_session_id: randomToken(16),
            // 0 declines DAVE: audio travels under transport encryption only.
            dave_protocol_version: daveVersion,
          },
        });
        options.onEvent?.({
          at: performance.now(),
          channelId: allocation.channelId,
          kind: 'session',
          userId: allocation.userId,
          step: daveVersion === 1 ? 'dave' : 'declined',
        });
        // After op 4: the client handles DAVE's binary messages only once it is Ready.
        if (daveVersion === 1) {
          options.dave.start(allocation.guildId, allocation.channelId, {
            userId: allocation.userId,
            sendJson: (op, payload) => {
              if (allocation.ws) send(allocation, allocation.ws, { op, d: payload });
            },
            sendBinary: (op, payload) => sendBinary(allocation, op, payload),
          });
        } else options.dave.stop(allocation.guildId);
        setConnected(allocation, true);
        return;
      }
      case OP.heartbeat:
        if (!dropHeartbeats) send(bound.a, ws, { op: OP.heartbeatAck, d: { t: d.t } });
        return;
      case OP.speaking:
        if (bound.a) options.events.onSpeaking(bound.a.guildId, Number(d.speaking ?? 0));
        return;
      case OP.resume: {
        const allocation = allocations.get(String(d.server_id));
        if (
          !allocation ||
          allocation.token !== d.token ||
          allocation.sessionId !== d.session_id ||
          !allocation.secretKey
        ) {
          ws.close(4006, 'Session no longer valid.');
          return;
        }
        if (allocation.ws && allocation.ws !== ws) allocation.ws.close(4006, 'Session no longer valid.');
        allocation.ws = ws;
        bound.a = allocation;
        handshakes.resumed += 1;
        send(allocation, ws, { op: OP.resumed, d: null });
        setConnected(allocation, true);
        return;
      }
      default:
        // DAVE: 23 ready for transition, 31 invalid commit/welcome.
        if (bound.a && typeof packet.op === 'number') options.dave.onJson(bound.a.guildId, packet.op, d);
        return;
    }
  };

  wss.on('connection', (ws) => {
    const bound: { a?: Allocation } = {};
    ws.on('message', (raw, isBinary) => onMessage(ws, raw, isBinary, bound));
    ws.on('error', () => {});
    ws.on('close', () => {
      const allocation = bound.a;
      if (allocation?.ws === ws) {
        allocation.ws = undefined;
        setConnected(allocation, false);
      }
    });
    send(undefined, ws, { op: OP.hello, d: { heartbeat_interval: options.heartbeatIntervalMs, v: 8 } });
  });

  await new Promise<void>((resolve) => https_.listen(0, '127.0.0.1', resolve));
  const address = https_.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    endpoint: `127.0.0.1:${port}`,
    receiverNice: media.receiverNice,
    setReceiverNap: (ms) => media.setNap(ms),
    holdPackets: (reader) => media.hold(reader),
    heldPackets: () => media.held(),
    releasePackets: () => media.release(),
    allocate: (guildId, userId, sessionId, channelId) => {
      const previous = allocations.get(guildId);
      if (previous) retire(previous);
      options.dave.stop(guildId);
      const token = randomBytes(8).toString('hex');
      allocations.set(guildId, {
        guildId,
        userId,
        sessionId,
        token,
        channelId,
        maxDave: 0,
        ssrc: 0,
        secretKey: undefined,
        transport: undefined,
        seq: 0,
        // The old socket stays with the old allocation; the library replaces it on the new endpoint.
        ws: undefined,
        connected: false,
      });
      if (previous?.connected) options.events.onConnectedChange(guildId, false);
      return token;
    },
    release: (guildId) => {
      const allocation = allocations.get(guildId);
      if (!allocation) return;
      allocations.delete(guildId);
      retire(allocation);
      options.dave.stop(guildId);
      setConnected(allocation, false);
    },
    closeSocket: (guildId, code, reason) => {
      const ws = allocations.get(guildId)?.ws;
      if (!ws || ws.readyState !== ws.OPEN) return false;
      ws.close(code, reason);
      return true;
    },
    isConnected: (guildId) => allocations.get(guildId)?.connected === true,
    dropHeartbeats: (on) => {
      dropHeartbeats = on;
    },
    delayHandshake: (ms) => {
      handshakeDelayMs = ms;
    },
    rejected: media.rejected,
    lost: media.lost,
    loseUdp: (guildId, share) => media.loseUdp(guildId, share),
    handshakes,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      https_.closeAllConnections();
      await new Promise<void>((resolve) => https_.close(() => resolve()));
      await media.close();
    },
  };
}
