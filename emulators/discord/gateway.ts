import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { randomToken } from './model.ts';

/** What the bot sent in its IDENTIFY. */
export interface IdentifyRecord {
  readonly intents: number;
  readonly at: number;
}

/** Hooks through which the gateway asks the emulator for state and reports what the bot asked for. */
export interface GatewayHooks {
  /** The READY `d` for a new session (without `session_id`, `resume_gateway_url`, `shard`, `v`). */
  readyPayload(): Record<string, unknown>;
  /** Sends the GUILD_CREATEs (and anything else) that follow READY, through `dispatch`. */
  afterReady(): void;
  /** Opcode 4 from the bot: join, move or leave a voice channel. */
  onVoiceStateUpdate(d: { guild_id: string; channel_id: string | null; self_deaf?: boolean }): void;
  /** A new session is ready (READY and every GUILD_CREATE were sent). */
  onReady(): void;
  /** A RESUME succeeded (RESUMED was sent). */
  onResumed(): void;
}

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** The bot token IDENTIFY and RESUME must carry. */
  readonly token: string;
  /** HELLO's heartbeat interval; Discord uses 41250 ms. */
  readonly heartbeatIntervalMs: number;
  /** The URL handed out as `resume_gateway_url`. */
  readonly url: () => string;
  readonly hooks: GatewayHooks;
}

/** The emulated gateway v10: one shard, one live session at a time. */
export interface Gateway {
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Sends a dispatch to the bot's session when its intents allow (`intent`: the required bit); logged for RESUME. */
  dispatch(event: string, data: unknown, intent?: number): void;
  /** The gateway session id of the live session (used as the bot's voice `session_id`), if any. */
  sessionId(): string | undefined;
  /** The intents of the live session (0 before IDENTIFY). */
  intents(): number;
  readonly identifies: readonly IdentifyRecord[];
  /** True once READY and every GUILD_CREATE of the live session were sent. */
  isReady(): boolean;
  /** Resolves when the current (or next) session is ready. */
  untilReady(): Promise<void>;
  dropHeartbeats(on: boolean): void;
  /** Sends op 7: the client closes and resumes. */
  reconnect(): void;
  /** Sends op 9 with `d: resumable`; a non-resumable session is forgotten. */
  invalidateSession(resumable: boolean): void;
  /** Number of heartbeats answered and ignored so far, for tests of the fault. */
  readonly heartbeats: { acked: number; dropped: number };
  close(): void;
}

interface Session {
  readonly id: string;
  readonly intents: number;
  seq: number;
  readonly log: { s: number; t: string; d: unknown }[];
  ws: WebSocket | undefined;
  ready: boolean;
}

const OP = {
  dispatch: 0,
  heartbeat: 1,
  identify: 2,
  voiceState: 4,
  resume: 6,
  reconnect: 7,
  invalid: 9,
  hello: 10,
};

/** Creates the gateway; HTTP upgrades for `/gateway` are handed to it by the REST server. */
export function createGateway(options: GatewayOptions): Gateway {
  const wss = new WebSocketServer({ noServer: true });
  const identifies: IdentifyRecord[] = [];
  const heartbeats = { acked: 0, dropped: 0 };
  let session: Session | undefined;
  let dropHeartbeats = false;
  let readyWaiters: (() => void)[] = [];

  const send = (ws: WebSocket, payload: object): void => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(payload));
  };

  const dispatch = (event: string, data: unknown, intent?: number): void => {
    if (!session) return;
    if (intent !== undefined && (session.intents & intent) === 0) return;
    session.seq += 1;
    const entry = { s: session.seq, t: event, d: data };
    session.log.push(entry);
    if (session.ws) send(session.ws, { op: OP.dispatch, ...entry });
  };

  const markReady = (): void => {
    if (!session) return;
    session.ready = true;
    const waiters = readyWaiters;
    readyWaiters = [];
    for (const resolve of waiters) resolve();
  };

  const onIdentify = (ws: WebSocket, d: { token?: string; intents?: number }): void => {
    if (d.token !== options.token) {
      ws.close(4004, 'Authentication failed.');
      return;
    }
    const intents = d.intents ?? 0;
    identifies.push({ intents, at: Date.now() });
    if (session?.ws && session.ws !== ws) session.ws.close(4000, 'Superseded.');
    session = { id: randomToken(16), intents, seq: 0, log: [], ws, ready: false };
    dispatch('READY', {
      v: 10,
      ...options.hooks.readyPayload(),
      session_id: session.id,
      resume_gateway_url: options.url(),
      shard: [0, 1],
    });
    options.hooks.afterReady();
    markReady();
    options.hooks.onReady();
  };

  const onResume = (ws: WebSocket, d: { token?: string; session_id?: string; seq?: number }): void => {
    if (d.token !== options.token) {
      ws.close(4004, 'Authentication failed.');
      return;
    }
    if (!session || session.id !== d.session_id) {
      send(ws, { op: OP.invalid, d: false });
      return;
    }
    if (session.ws && session.ws !== ws) session.ws.close(4000, 'Resumed elsewhere.');
    session.ws = ws;
    const after = d.seq ?? 0;
    for (const entry of session.log) if (entry.s > after) send(ws, { op: OP.dispatch, ...entry });
    dispatch('RESUMED', null);
    options.hooks.onResumed();
  };

  const onMessage = (ws: WebSocket, raw: RawData): void => {
    let packet: { op?: number; d?: unknown };
    try {
      packet = JSON.parse(String(raw)) as { op?: number; d?: unknown };
    } catch {
      ws.close(4002, 'Decode error.');
      return;
    }
    switch (packet.op) {
      case OP.heartbeat:
        if (dropHeartbeats) heartbeats.dropped += 1;
        else {
          heartbeats.acked += 1;
          send(ws, { op: 11 });
        }
        return;
      case OP.identify:
        onIdentify(ws, (packet.d ?? {}) as { token?: string; intents?: number });
        return;
      case OP.resume:
        onResume(ws, (packet.d ?? {}) as { token?: string; session_id?: string; seq?: number });
        return;
      case OP.voiceState:
        if (session?.ws === ws) {
          options.hooks.onVoiceStateUpdate(
            packet.d as { guild_id: string; channel_id: string | null; self_deaf?: boolean },
          );
        }
        return;
      default:
        // Presence updates (3), member requests (8) and the rest are accepted and ignored.
        return;
    }
  };

  wss.on('connection', (ws) => {
    send(ws, { op: OP.hello, d: { heartbeat_interval: options.heartbeatIntervalMs } });
    ws.on('message', (raw) => onMessage(ws, raw));
    ws.on('close', () => {
      if (session?.ws === ws) session.ws = undefined;
    });
    ws.on('error', () => {});
  });

  return {
    handleUpgrade: (request, socket, head) => {
      wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
    },
    dispatch,
    sessionId: () => session?.id,
    intents: () => session?.intents ?? 0,
    identifies,
    isReady: () => session?.ready === true,
    untilReady: () =>
      session?.ready && session.ws
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            readyWaiters.push(resolve);
          }),
    dropHeartbeats: (on) => {
      dropHeartbeats = on;
    },
    reconnect: () => {
      if (session?.ws) send(session.ws, { op: OP.reconnect, d: null });
    },
    invalidateSession: (resumable) => {
      const ws = session?.ws;
      if (!session || !ws) return;
      if (!resumable) session = undefined;
      send(ws, { op: OP.invalid, d: resumable });
    },
    heartbeats,
    close: () => {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}
