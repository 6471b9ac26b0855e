/**
 * DAVE for every guild's media session: one gateway-side group per bot voice session, and one davey listener
 * per member sitting in the bot's channel. Members joining, moving and leaving change the group mid-stream.
 */
import Davey from '@snazzah/davey';
import { createDaveGroup, type DaveClient, type DaveGroup } from './dave-group.ts';
import { createDaveListener, type DaveListener, type DecryptResult } from './dave-listener.ts';

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
  /** The bot's voice session in `guildId` is Ready with DAVE; `bot` sends to its voice websocket. */
  start(guildId: string, channelId: string, bot: DaveClient): void;
  /** The bot's voice session ended (socket closed, left, moved). */
  stop(guildId: string): void;
  /** Who (besides the bot) sits in the bot's channel now; `channelId` null when the bot is not in voice. */
  setPresent(guildId: string, channelId: string | null, userIds: readonly string[]): void;
  onBinary(guildId: string, op: number, payload: Buffer): void;
  onJson(guildId: string, op: number, d: Record<string, unknown>): void;
  /** Hands a frame (transport-decrypted) to the members present; without DAVE they hear it as it is. */
  hear(guildId: string, payload: Buffer): FrameHearing;
  /** The group of the guild's live session, if DAVE runs there. */
  group(guildId: string): DaveGroup | undefined;
  /** The listener of `userId` in the guild's live session, if any. */
  listener(guildId: string, userId: string): DaveListener | undefined;
  /** Injects DAVE faults into the guild's session (a rejected key package waits for the next session). */
  faults(guildId: string): DaveFaultTarget;
  close(): void;
}

interface MediaSession {
  readonly channelId: string;
  readonly group: DaveGroup;
  readonly listeners: Map<string, DaveListener>;
}

const MAGIC_MARKER = 0xfafa;
const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);

/** Creates the DAVE layer for the bot `botUserId`. */
export function createDaveMedia(botUserId: string): DaveMedia {
  const sessions = new Map<string, MediaSession>();
  const rejectOnStart = new Set<string>();
  const present = new Map<string, { channelId: string | null; userIds: Set<string> }>();

  const addListener = (session: MediaSession, userId: string): void => {
    const listener = createDaveListener(userId, session.channelId, botUserId, {
      onBinary: (from, op, payload) => session.group.onBinary(from, op, payload),
      onJson: (from, op, d) => session.group.onJson(from, op, d),
    });
    session.listeners.set(userId, listener);
    session.group.join(listener.client);
  };

  const removeListener = (session: MediaSession, userId: string): void => {
    session.listeners.get(userId)?.close();
    session.listeners.delete(userId);
    session.group.leave(userId);
  };

  const sync = (guildId: string): void => {
    const session = sessions.get(guildId);
    if (!session) return;
    const here = present.get(guildId);
    const wanted = here?.channelId === session.channelId ? here.userIds : new Set<string>();
    for (const userId of [...session.listeners.keys()]) {
      if (!wanted.has(userId)) removeListener(session, userId);
    }
    for (const userId of wanted) if (!session.listeners.has(userId)) addListener(session, userId);
  };

  const stop = (guildId: string): void => {
    const session = sessions.get(guildId);
    if (!session) return;
    sessions.delete(guildId);
    for (const listener of session.listeners.values()) listener.close();
    session.group.close();
  };

  const target = (guildId: string): { session: MediaSession | undefined; group: DaveGroup | undefined } => {
    const session = sessions.get(guildId);
    return { session, group: session?.group };
  };

  return {
    start: (guildId, channelId, bot) => {
      stop(guildId);
      const session: MediaSession = { channelId, group: createDaveGroup(channelId), listeners: new Map() };
      sessions.set(guildId, session);
      if (rejectOnStart.delete(guildId)) session.group.faults.rejectNextKeyPackage(botUserId);
      // Members already in the channel were there first (flow B of dave-facts.md): they join the group first.
      sync(guildId);
      session.group.join(bot);
    },
    stop,
    setPresent: (guildId, channelId, userIds) => {
      present.set(guildId, { channelId, userIds: new Set(userIds.filter((id) => id !== botUserId)) });
      sync(guildId);
    },
    onBinary: (guildId, op, payload) => sessions.get(guildId)?.group.onBinary(botUserId, op, payload),
    onJson: (guildId, op, d) => sessions.get(guildId)?.group.onJson(botUserId, op, d),
    hear: (guildId, payload) => {
      const session = sessions.get(guildId);
      const e2ee = payload.length >= 2 && payload.readUInt16BE(payload.length - 2) === MAGIC_MARKER;
      const listeners = new Map<string, DecryptResult>();
      if (!session) {
        // No DAVE on this session: every member's client plays the frame as it arrives.
        const here = present.get(guildId);
        for (const userId of here?.userIds ?? []) listeners.set(userId, { ok: true, opus: payload });
        return { e2ee, dave: false, listeners };
      }
      for (const [userId, listener] of session.listeners) {
        // Discord clients pass the silence frame through, as the library does.
        listeners.set(
          userId,
          payload.equals(SILENCE) ? { ok: true, opus: payload } : listener.decrypt(payload),
        );
      }
      return { e2ee, dave: true, listeners };
    },
    group: (guildId) => sessions.get(guildId)?.group,
    listener: (guildId, userId) => sessions.get(guildId)?.listeners.get(userId),
    faults: (guildId) => ({
      proposeUnknownUser: () => {
        const { session, group } = target(guildId);
        if (!session || !group) throw new Error('discord emulator: no DAVE session in this guild');
        // A key package of a user nobody announced (no op 11), made by a throwaway davey session.
        const stranger = new Davey.DAVESession(1, '1000000000000000001', session.channelId);
        group.faults.proposeUnknownUser(botUserId, stranger.getSerializedKeyPackage());
        stranger.reset();
      },
      malformedCommit: () => target(guildId).group?.faults.malformedCommit(botUserId),
      malformedWelcome: () => target(guildId).group?.faults.malformedWelcome(botUserId),
      invalidTransition: () => target(guildId).group?.faults.invalidTransition(botUserId),
      rejectNextKeyPackage: () => {
        const { group } = target(guildId);
        if (group) group.faults.rejectNextKeyPackage(botUserId);
        else rejectOnStart.add(guildId);
      },
    }),
    close: () => {
      for (const guildId of [...sessions.keys()]) stop(guildId);
    },
  };
}
