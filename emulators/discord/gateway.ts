import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { randomToken } from './model.ts';

/** A shard as IDENTIFY names it: `[shard_id, num_shards]`. */
export type ShardPair = readonly [id: number, count: number];

/** What the bot sent in its IDENTIFY. */
export interface IdentifyRecord {
  readonly intents: number;
  readonly at: number;
  /** The `shard` field as sent, when it was valid; undefined for a shard-less IDENTIFY (Discord's [0, 1]). */
  readonly shard: ShardPair | undefined;
  /** Its rate-limit bucket: `shard_id % max_concurrency` (one IDENTIFY per bucket per 5 s is Discord's rule). */
  readonly bucket: number;
}

/** A RESUME the gateway accepted. */
export interface ResumeRecord {
  readonly at: number;
  readonly shard: ShardPair;
  /** How many missed dispatches were replayed before RESUMED. */
  readonly replayed: number;
}

/** A gateway session, as tests see it. */
export interface SessionView {
  readonly shard: ShardPair;
  readonly sessionId: string;
  /** True while its WebSocket is open. */
  readonly connected: boolean;
  readonly ready: boolean;
}

/** Tells whether a guild belongs to a shard. */
export type Owns = (guildId: string) => boolean;

/** Hooks through which the gateway asks the emulator for state and reports what the bot asked for. */
export interface GatewayHooks {
  /** The READY `d` for a new session (without `session_id`, `resume_gateway_url`, `shard`, `v`): its guilds only. */
  readyPayload(owns: Owns): Record<string, unknown>;
  /** Sends the GUILD_CREATEs (and anything else) that follow READY, for the session's guilds, through `send`. */
  afterReady(owns: Owns, send: (event: string, data: unknown) => void): void;
  /** How many guilds a session for `owns` would carry (for close 4011). */
  guildCount(owns: Owns): number;
  /** Opcode 4 from the bot (only from the session that owns the guild): join, move or leave a voice channel. */
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
  /** Most guilds one session may carry before Discord closes it with 4011 (sharding required); Discord: 2500. */
  readonly maxGuildsPerShard: number;
  /** `max_concurrency` as GET /gateway/bot reports it; sets each IDENTIFY's bucket. */
  readonly maxConcurrency: number;
  /** How long a session whose socket closed (other than 1000/1001) or dropped can still be resumed. */
  readonly resumeWindowMs: number;
  readonly hooks: GatewayHooks;
}

/**
 * The emulated gateway v10, sharded as Discord shards: one live session per shard, each given only the guilds with
 * `(guild_id >> 22) % num_shards === shard_id` and only their events.
 */
export interface Gateway {
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /**
   * Sends a dispatch to the session of the shard owning the event's guild (`guild_id`, or `id` for GUILD_CREATE,
   * GUILD_UPDATE, GUILD_DELETE; shard 0 for events of no guild), when its intents allow (`intent`: the bit needed).
   */
  dispatch(event: string, data: unknown, intent?: number): void;
  /** The session id of the session owning `guildId` (shard 0's without one): the bot's voice `session_id`. */
  sessionId(guildId?: string): string | undefined;
  /** The intents of the session owning `guildId` (shard 0's without one); 0 before IDENTIFY. */
  intents(guildId?: string): number;
  readonly identifies: readonly IdentifyRecord[];
  /** Every RESUME accepted, in order; a RESUME of an ended or unknown session (answered op 9) is not here. */
  readonly resumes: readonly ResumeRecord[];
  /** IDENTIFYs and accepted RESUMEs of one shard id so far. */
  countsOf(shardId: number): { identifies: number; resumes: number };
  /**
   * With a guild: its shard's session is ready. Without: every shard of the latest IDENTIFY's count has a ready
   * session.
   */
  isReady(guildId?: string): boolean;
  /** Resolves when every shard's session is ready and connected. */
  untilReady(): Promise<void>;
  /** The sessions the gateway holds, by shard id. */
  sessions(): SessionView[];
  dropHeartbeats(on: boolean): void;
  /** Sends op 7 to every connected session (or to one shard's): the client closes and resumes. */
  reconnect(shardId?: number): void;
  /**
   * Sends op 9 with `d: resumable` to every connected session (or one shard's); non-resumable ones are forgotten,
   * connected or not, so a later RESUME of theirs gets op 9 `d: false` (Discord ending a session while the bot was
   * away).
   */
  invalidateSession(resumable: boolean, shardId?: number): void;
  /** Sends the next dispatch of `event` twice, with the same sequence (a replay of what the client had). */
  deliverTwice(event: string): void;
  /** Number of heartbeats answered and ignored so far, for tests of the fault. */
  readonly heartbeats: { acked: number; dropped: number };
  close(): void;
}

interface Session {
  readonly id: string;
  readonly intents: number;
  readonly shard: ShardPair;
  seq: number;
  readonly log: { s: number; t: string; d: unknown }[];
  ws: WebSocket | undefined;
  ready: boolean;
  /** When its socket last went away (Date.now()); undefined while connected. */
  awaySince: number | undefined;
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

/** Dispatches whose `d.id` is the guild's id; every other guild event carries `d.guild_id`. */
const GUILD_ID_IN_ID = new Set(['GUILD_CREATE', 'GUILD_UPDATE', 'GUILD_DELETE']);

/** Discord's rule: a guild belongs to shard `(guild_id >> 22) % num_shards`. */
export function shardOf(guildId: string, count: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(count));
}

/** Creates the gateway; HTTP upgrades for `/gateway` are handed to it by the REST server. */
export function createGateway(options: GatewayOptions): Gateway {
  const wss = new WebSocketServer({ noServer: true });
  const identifies: IdentifyRecord[] = [];
  const resumes: ResumeRecord[] = [];
  const heartbeats = { acked: 0, dropped: 0 };
  // One session per shard id; a session outlives its socket so that the bot can RESUME it.
  const sessions = new Map<number, Session>();
  let dropHeartbeats = false;
  /** Events whose next dispatch goes out twice (deliverTwice). */
  const twice = new Set<string>();
  let readyWaiters: (() => void)[] = [];

  const send = (ws: WebSocket, payload: object): void => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(payload));
  };
  const owner = (session: Session): Owns => {
    const [id, count] = session.shard;
    return (guildId) => shardOf(guildId, count) === id;
  };
  /** The session owning a guild: shard 0's for none (Discord sends DMs and guild-less events to shard 0). */
  const sessionFor = (guildId: string | undefined): Session | undefined => {
    for (const session of sessions.values()) {
      if (guildId === undefined ? session.shard[0] === 0 : owner(session)(guildId)) return session;
    }
    return undefined;
  };
  const currentCount = (): number => identifies.at(-1)?.shard?.[1] ?? 1;

  const sendTo = (session: Session, event: string, data: unknown): void => {
    session.seq += 1;
    const entry = { s: session.seq, t: event, d: data };
    session.log.push(entry);
    if (!session.ws) return;
    send(session.ws, { op: OP.dispatch, ...entry });
    if (twice.delete(event)) send(session.ws, { op: OP.dispatch, ...entry });
  };

  const guildIdOf = (event: string, data: unknown): string | undefined => {
    const d = (data ?? {}) as { id?: unknown; guild_id?: unknown };
    const id = GUILD_ID_IN_ID.has(event) ? d.id : d.guild_id;
    return typeof id === 'string' ? id : undefined;
  };

  const dispatch = (event: string, data: unknown, intent?: number): void => {
    const session = sessionFor(guildIdOf(event, data));
    if (!session) return;
    if (intent !== undefined && (session.intents & intent) === 0) return;
    sendTo(session, event, data);
  };

  const isReady = (guildId?: string): boolean => {
    if (guildId !== undefined) return sessionFor(guildId)?.ready === true;
    const count = currentCount();
    for (let id = 0; id < count; id += 1) {
      const session = sessions.get(id);
      if (session?.ready !== true || session.shard[1] !== count) return false;
    }
    return true;
  };
  const allConnected = (): boolean => isReady() && [...sessions.values()].every((s) => s.ws !== undefined);

  const wakeWaiters = (): void => {
    if (!allConnected()) return;
    const waiters = readyWaiters;
    readyWaiters = [];
    for (const resolve of waiters) resolve();
  };

  /** The shard as IDENTIFY sent it, or why Discord would refuse it (4010 Invalid shard). */
  const parseShard = (shard: unknown): ShardPair | 'invalid' | undefined => {
    if (shard === undefined || shard === null) return undefined;
    if (!Array.isArray(shard) || shard.length !== 2) return 'invalid';
    const [id, count] = shard as unknown[];
    if (!Number.isInteger(id) || !Number.isInteger(count)) return 'invalid';
    if ((count as number) < 1 || (id as number) < 0 || (id as number) >= (count as number)) return 'invalid';
    return [id as number, count as number];
  };

  const onIdentify = (ws: WebSocket, d: { token?: string; intents?: number; shard?: unknown }): void => {
    if (d.token !== options.token) {
      ws.close(4004, 'Authentication failed.');
      return;
    }
    const parsed = parseShard(d.shard);
    if (parsed === 'invalid') {
      ws.close(4010, 'Invalid shard.');
      return;
    }
    const shard: ShardPair = parsed ?? [0, 1];
    const candidate = { shard } as Session;
    if (options.hooks.guildCount(owner(candidate)) > options.maxGuildsPerShard) {
      ws.close(4011, 'Sharding required.');
      return;
    }
    const intents = d.intents ?? 0;
    identifies.push({ intents, at: Date.now(), shard: parsed, bucket: shard[0] % options.maxConcurrency });
    const previous = sessions.get(shard[0]);
    if (previous?.ws && previous.ws !== ws) previous.ws.close(4000, 'Superseded.');
    // Sessions of another shard count (a resharding) whose socket is gone are forgotten: nothing resumes them.
    for (const [id, other] of sessions) if (other.shard[1] !== shard[1] && !other.ws) sessions.delete(id);
    const session: Session = {
      id: randomToken(16),
      intents,
      shard,
      seq: 0,
      log: [],
      ws,
      ready: false,
      awaySince: undefined,
    };
    sessions.set(shard[0], session);
    const owns = owner(session);
    sendTo(session, 'READY', {
      v: 10,
      ...options.hooks.readyPayload(owns),
      session_id: session.id,
      resume_gateway_url: options.url(),
      shard,
    });
    options.hooks.afterReady(owns, (event, data) => sendTo(session, event, data));
    session.ready = true;
    wakeWaiters();
    options.hooks.onReady();
  };

  const onResume = (ws: WebSocket, d: { token?: string; session_id?: string; seq?: number }): void => {
    if (d.token !== options.token) {
      ws.close(4004, 'Authentication failed.');
      return;
    }
    const found = [...sessions.values()].find((s) => s.id === d.session_id);
    const expired = found?.awaySince !== undefined && Date.now() - found.awaySince >= options.resumeWindowMs;
    if (found && expired) sessions.delete(found.shard[0]);
    const session = expired ? undefined : found;
    if (!session) {
      send(ws, { op: OP.invalid, d: false });
      return;
    }
    if (session.ws && session.ws !== ws) session.ws.close(4000, 'Resumed elsewhere.');
    session.ws = ws;
    session.awaySince = undefined;
    const after = d.seq ?? 0;
    const missed = session.log.filter((entry) => entry.s > after);
    for (const entry of missed) send(ws, { op: OP.dispatch, ...entry });
    resumes.push({ at: Date.now(), shard: session.shard, replayed: missed.length });
    sendTo(session, 'RESUMED', null);
    wakeWaiters();
    options.hooks.onResumed();
  };

  const onVoiceState = (ws: WebSocket, d: { guild_id: string; channel_id: string | null }): void => {
    // Discord takes a guild's voice state update only on the connection of the shard that owns the guild.
    const session = typeof d?.guild_id === 'string' ? sessionFor(d.guild_id) : undefined;
    if (session?.ws === ws) options.hooks.onVoiceStateUpdate(d);
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
        onIdentify(ws, (packet.d ?? {}) as { token?: string; intents?: number; shard?: unknown });
        return;
      case OP.resume:
        onResume(ws, (packet.d ?? {}) as { token?: string; session_id?: string; seq?: number });
        return;
      case OP.voiceState:
        onVoiceState(ws, packet.d as { guild_id: string; channel_id: string | null });
        return;
      default:
        // Presence updates (3), member requests (8) and the rest are accepted and ignored.
        return;
    }
  };

  wss.on('connection', (ws) => {
    send(ws, { op: OP.hello, d: { heartbeat_interval: options.heartbeatIntervalMs } });
    ws.on('message', (raw) => onMessage(ws, raw));
    ws.on('close', (code) => {
      for (const [id, session] of sessions) {
        if (session.ws !== ws) continue;
        session.ws = undefined;
        session.awaySince = Date.now();
        // As Discord: a close 1000 or 1001 from the client ends its session; any other close, or a dropped socket,
        // leaves it resumable.
        if (code === 1000 || code === 1001) sessions.delete(id);
      }
    });
    ws.on('error', () => {});
  });

  const targets = (shardId: number | undefined): Session[] =>
    [...sessions.values()].filter((s) => shardId === undefined || s.shard[0] === shardId);

  return {
    handleUpgrade: (request, socket, head) => {
      wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
    },
    dispatch,
    sessionId: (guildId) => sessionFor(guildId)?.id,
    intents: (guildId) => sessionFor(guildId)?.intents ?? 0,
    identifies,
    resumes,
    countsOf: (shardId) => ({
      identifies: identifies.filter((i) => (i.shard?.[0] ?? 0) === shardId).length,
      resumes: resumes.filter((r) => r.shard[0] === shardId).length,
    }),
    isReady,
    untilReady: () =>
      allConnected()
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            readyWaiters.push(resolve);
          }),
    sessions: () =>
      [...sessions.values()].map((s) => ({
        shard: s.shard,
        sessionId: s.id,
        connected: s.ws !== undefined,
        ready: s.ready,
      })),
    dropHeartbeats: (on) => {
      dropHeartbeats = on;
    },
    reconnect: (shardId) => {
      for (const session of targets(shardId)) if (session.ws) send(session.ws, { op: OP.reconnect, d: null });
    },
    deliverTwice: (event) => {
      twice.add(event);
    },
    invalidateSession: (resumable, shardId) => {
      for (const session of targets(shardId)) {
        const ws = session.ws;
        if (!resumable) sessions.delete(session.shard[0]);
        if (!ws) continue;
        send(ws, { op: OP.invalid, d: resumable });
        // An invalidated session is sent nothing more until it resumes: what happens meanwhile is logged and
        // replayed after the sequence its RESUME names. Sent on as well, an event could reach the client after it
        // built that RESUME (discord.js resumes on the same socket), and the replay would deliver it twice.
        session.ws = undefined;
      }
    },
    heartbeats,
    close: () => {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}
