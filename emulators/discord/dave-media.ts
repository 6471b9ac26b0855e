/**
 * DAVE for every voice channel's call: one gateway-side group per channel with someone in it, and one davey
 * listener per member sitting there, as on Discord where members hold their group before the bot arrives. The
 * bot's voice session joins the group of its channel. Members joining, moving and leaving change the group
 * mid-stream.
 */
import Davey from '@snazzah/davey';
import { createDaveGroup, type DaveGroup } from './dave-group.ts';
import { createDaveListeners, type DaveListener, type DecryptResult } from './dave-listener.ts';
import type { DaveClient, DaveEvent } from './dave-protocol.ts';

/** What the members in the channel made of one frame the bot sent. */
export interface FrameHearing {
  /** The payload carries DAVE's end-to-end encryption (it ends with the magic marker `FA FA`). */
  readonly e2ee: boolean;
  /** DAVE was negotiated for the bot's voice session when the frame arrived. */
  readonly dave: boolean;
  /** Per member present: the Opus they decrypted, or why they could not. */
  readonly listeners: ReadonlyMap<string, DecryptResult>;
}

/** DAVE faults, injected into one guild's media session. */
export interface DaveFaultTarget {
  proposeUnknownUser(): void;
  malformedCommit(): void;
  malformedWelcome(): void;
  invalidTransition(): void;
  rejectNextKeyPackage(): void;
}

/** The emulator's DAVE media layer. */
export interface DaveMedia {
  /** The bot's voice session in `guildId` is Ready with DAVE in `channelId`; `bot` sends to its websocket. */
  start(guildId: string, channelId: string, bot: DaveClient): void;
  /** The bot's voice session in `guildId` ended (socket replaced, left, moved): it leaves its group. */
  stop(guildId: string): void;
  /** Who (besides the bot) sits in voice channel `channelId` now. */
  setOccupants(channelId: string, userIds: readonly string[]): void;
  /**
   * A member's Discord client drops out of its channel's call (`online` false: its connection to the voice
   * server broke) or comes back, while its voice state stays in the channel, as on Discord during a reconnect.
   */
  setClientOnline(userId: string, online: boolean): void;
  /** The voice channel the bot sits in, in `guildId` (null: none). */
  setBotChannel(guildId: string, channelId: string | null): void;
  onBinary(guildId: string, op: number, payload: Buffer): void;
  onJson(guildId: string, op: number, d: Record<string, unknown>): void;
  /**
   * Hands a frame (transport-decrypted) to the members present now; without DAVE they hear it as it is. Their
   * clients decrypt in worker threads, in order with the MLS messages sent to them; a guild's hearings resolve
   * in the order its frames arrived.
   */
  hear(guildId: string, payload: Buffer): Promise<FrameHearing>;
  /** The group the bot's voice session in `guildId` belongs to, if DAVE runs there. */
  group(guildId: string): DaveGroup | undefined;
  /** The listener of `userId` in that group, if any. */
  listener(guildId: string, userId: string): DaveListener | undefined;
  /** Injects DAVE faults into the guild's session (a rejected key package waits for the next session). */
  faults(guildId: string): DaveFaultTarget;
  close(): Promise<void>;
}

/** One voice channel's call: its members are in the MLS group whether or not the bot is there, as on Discord. */
interface Call {
  readonly channelId: string;
  readonly group: DaveGroup;
  readonly listeners: Map<string, DaveListener>;
}

const MAGIC_MARKER = 0xfafa;

/** Whether a transport-decrypted payload carries DAVE end-to-end encryption (its last two bytes, the marker). */
export function isE2ee(payload: Buffer): boolean {
  return payload.length >= 2 && payload.readUInt16BE(payload.length - 2) === MAGIC_MARKER;
}
const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);

/**
 * Creates the DAVE layer for the bot `botUserId`; with `enabled` false, only occupancy is tracked. `onEvent` is
 * told of each step of every group's DAVE flow, members' MLS operations included. The members' clients run in
 * `listenerThreads` worker threads: on Discord each member is its own machine, so two members commit in parallel.
 */
export function createDaveMedia(
  botUserId: string,
  enabled: boolean,
  onEvent?: (event: DaveEvent) => void,
  listenerThreads = 2,
): DaveMedia {
  const clients = createDaveListeners(botUserId, {
    threads: listenerThreads,
    onMlsStep: (s) =>
      onEvent?.({
        at: s.startedAt + s.ms,
        channelId: s.channelId,
        kind: 'mls',
        userId: s.userId,
        step: s.step,
        ms: s.ms,
      }),
  });
  const calls = new Map<string, Call>();
  const occupants = new Map<string, Set<string>>();
  const botChannel = new Map<string, string>();
  /** Guild → the channel whose group holds the bot's DAVE client. */
  const botCall = new Map<string, string>();
  const rejectOnStart = new Set<string>();
  /** Members whose client is out of the call though their voice state is in the channel. */
  const offline = new Set<string>();

  const callOf = (channelId: string): Call => {
    let call = calls.get(channelId);
    if (!call) {
      call = { channelId, group: createDaveGroup(channelId, onEvent), listeners: new Map() };
      calls.set(channelId, call);
    }
    return call;
  };

  /** Forgets a call nobody is in any more. */
  const prune = (channelId: string): void => {
    const call = calls.get(channelId);
    if (!call || call.listeners.size > 0 || [...botCall.values()].includes(channelId)) return;
    call.group.close();
    calls.delete(channelId);
  };

  const sync = (channelId: string): void => {
    if (!enabled) return;
    const wanted = new Set([...(occupants.get(channelId) ?? [])].filter((id) => !offline.has(id)));
    const existing = calls.get(channelId);
    if (!existing && wanted.size === 0) return;
    const call = callOf(channelId);
    for (const userId of [...call.listeners.keys()]) {
      if (wanted.has(userId)) continue;
      call.listeners.get(userId)?.close();
      call.listeners.delete(userId);
      call.group.leave(userId);
    }
    for (const userId of wanted) {
      if (call.listeners.has(userId)) continue;
      const listener = clients.create(userId, channelId, {
        onBinary: (from, op, payload) => call.group.onBinary(from, op, payload),
        onJson: (from, op, d) => call.group.onJson(from, op, d),
      });
      call.listeners.set(userId, listener);
      call.group.join(listener.client);
    }
    prune(channelId);
  };

  const stop = (guildId: string): void => {
    const channelId = botCall.get(guildId);
    if (channelId === undefined) return;
    botCall.delete(guildId);
    calls.get(channelId)?.group.leave(botUserId);
    prune(channelId);
  };

  const current = (guildId: string): Call | undefined => {
    const channelId = botCall.get(guildId);
    return channelId === undefined ? undefined : calls.get(channelId);
  };

  const target = (guildId: string): DaveGroup => {
    const group = current(guildId)?.group;
    if (!group) throw new Error('discord emulator: no DAVE session in this guild');
    return group;
  };

  /** What the members present now make of a frame. */
  const hearNow = async (guildId: string, payload: Buffer): Promise<FrameHearing> => {
    const call = current(guildId);
    const e2ee = isE2ee(payload);
    if (!call) {
      // No DAVE on this session: every member's client plays the frame as it arrives.
      const listeners = new Map<string, DecryptResult>();
      const channelId = botChannel.get(guildId);
      for (const userId of (channelId && occupants.get(channelId)) || []) {
        listeners.set(userId, { ok: true, opus: payload });
      }
      return { e2ee, dave: false, listeners };
    }
    const present = [...call.listeners.values()];
    // Discord clients pass the silence frame through, as the library does.
    const listeners: Map<string, DecryptResult> = payload.equals(SILENCE)
      ? new Map(present.map((l) => [l.userId, { ok: true, opus: payload }]))
      : await clients.decrypt(present, payload);
    return { e2ee, dave: true, listeners };
  };
  /** Per guild: the last hearing handed out, which the next one resolves after. */
  const inOrder = new Map<string, Promise<void>>();

  return {
    start: (guildId, channelId, bot) => {
      stop(guildId);
      const call = callOf(channelId);
      botCall.set(guildId, channelId);
      if (rejectOnStart.delete(guildId)) call.group.faults.rejectNextKeyPackage(botUserId);
      call.group.join(bot);
    },
    stop,
    setOccupants: (channelId, userIds) => {
      occupants.set(channelId, new Set(userIds.filter((id) => id !== botUserId)));
      sync(channelId);
    },
    setClientOnline: (userId, online) => {
      if (online) offline.delete(userId);
      else offline.add(userId);
      for (const [channelId, users] of occupants) if (users.has(userId)) sync(channelId);
    },
    setBotChannel: (guildId, channelId) => {
      if (channelId) botChannel.set(guildId, channelId);
      else botChannel.delete(guildId);
    },
    onBinary: (guildId, op, payload) => current(guildId)?.group.onBinary(botUserId, op, payload),
    onJson: (guildId, op, d) => current(guildId)?.group.onJson(botUserId, op, d),
    hear: (guildId, payload) => {
      const heard = hearNow(guildId, payload);
      // Each hearing resolves after the guild's previous one, so callers see frames in arrival order.
      const next = Promise.all([heard, inOrder.get(guildId)]).then(([hearing]) => hearing);
      const tail = next.then(() => {});
      inOrder.set(guildId, tail);
      void tail.then(() => {
        if (inOrder.get(guildId) === tail) inOrder.delete(guildId);
      });
      return next;
    },
    group: (guildId) => current(guildId)?.group,
    listener: (guildId, userId) => current(guildId)?.listeners.get(userId),
    faults: (guildId) => ({
      proposeUnknownUser: () => {
        const call = current(guildId);
        if (!call) throw new Error('discord emulator: no DAVE session in this guild');
        // A key package of a user nobody announced (no op 11), made by a throwaway davey session.
        const stranger = new Davey.DAVESession(1, '1000000000000000001', call.channelId);
        call.group.faults.proposeUnknownUser(botUserId, stranger.getSerializedKeyPackage());
        stranger.reset();
      },
      malformedCommit: () => target(guildId).faults.malformedCommit(botUserId),
      malformedWelcome: () => target(guildId).faults.malformedWelcome(botUserId),
      invalidTransition: () => target(guildId).faults.invalidTransition(botUserId),
      rejectNextKeyPackage: () => {
        const group = current(guildId)?.group;
        if (group) group.faults.rejectNextKeyPackage(botUserId);
        else rejectOnStart.add(guildId);
      },
    }),
    close: async () => {
      for (const call of calls.values()) {
        for (const listener of call.listeners.values()) listener.close();
        call.group.close();
      }
      calls.clear();
      botCall.clear();
      await clients.close();
    },
  };
}
