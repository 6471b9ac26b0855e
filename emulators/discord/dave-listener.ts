/**
 * A member in the bot's voice channel, as a DAVE client: a second davey session in the MLS group that answers
 * the gateway as the Discord client does, and decrypts the bot's frames as a member would hear them.
 */
import { performance } from 'node:perf_hooks';
import Davey from '@snazzah/davey';
import { DAVE_OP, type DaveClient } from './dave-group.ts';

/** Why a listener could not hear a frame: davey's error kind, or `unencrypted` (no DAVE on a DAVE call). */
export type DecryptResult =
  | { readonly ok: true; readonly opus: Buffer }
  | { readonly ok: false; readonly error: string };

/** A listener: the gateway talks to it through `client`; the voice server hands it the bot's frames. */
export interface DaveListener {
  readonly userId: string;
  readonly client: DaveClient;
  /** Decrypts a frame the bot sent, as this member's Discord client would. */
  decrypt(payload: Buffer): DecryptResult;
  /** The MLS epoch the listener holds (0n before it holds a group). */
  epoch(): bigint;
  /** `performance.now()` when it last processed a welcome (joined a group), if ever. */
  welcomedAt(): number | undefined;
  close(): void;
}

/** Messages from the listener back to the gateway. */
export interface ListenerUplink {
  onBinary(userId: string, op: number, payload: Buffer): void;
  onJson(userId: string, op: number, d: Record<string, unknown>): void;
}

// davey's const enums cannot be imported under isolatedModules; the values are fixed by the protocol.
const MEDIA_AUDIO = 0 as Davey.MediaType;
const DAVE_VERSION = 1;

const debug = (line: string): void => {
  if (process.env.DAVE_DEBUG) console.log(`${performance.now().toFixed(1)} dave listener: ${line}`);
};

/** Creates the listener `userId` in `channelId`, hearing `botUserId`. */
export function createDaveListener(
  userId: string,
  channelId: string,
  botUserId: string,
  uplink: ListenerUplink,
): DaveListener {
  const session = new Davey.DAVESession(DAVE_VERSION, userId, channelId);
  const recognised = new Set<string>();
  let closed = false;
  let welcomedAt: number | undefined;
  // A real client answers over the network: never inside the gateway's own call.
  const later = (action: () => void): void => {
    setImmediate(() => {
      if (!closed) action();
    });
  };
  const sendKeyPackage = (): void =>
    uplink.onBinary(userId, DAVE_OP.keyPackage, session.getSerializedKeyPackage());
  const invalid = (transitionId: number): void => {
    uplink.onJson(userId, DAVE_OP.invalidCommitWelcome, { transition_id: transitionId });
    session.reinit(DAVE_VERSION, userId, channelId);
    sendKeyPackage();
  };

  const onBinary = (op: number, payload: Buffer): void => {
    switch (op) {
      case DAVE_OP.externalSender:
        session.setExternalSender(payload);
        sendKeyPackage();
        return;
      case DAVE_OP.proposals: {
        const { commit, welcome } = session.processProposals(
          payload.readUInt8(0) as Davey.ProposalsOperationType,
          payload.subarray(1),
          [...recognised],
        );
        if (commit) {
          uplink.onBinary(userId, DAVE_OP.commitWelcome, welcome ? Buffer.concat([commit, welcome]) : commit);
        }
        return;
      }
      case DAVE_OP.announceCommit:
      case DAVE_OP.welcome: {
        const transitionId = payload.readUInt16BE(0);
        try {
          if (op === DAVE_OP.announceCommit) session.processCommit(payload.subarray(2));
          else {
            session.processWelcome(payload.subarray(2));
            welcomedAt = performance.now();
          }
        } catch (error) {
          debug(
            `${userId.slice(-4)} ${op === DAVE_OP.welcome ? 'welcome' : 'commit'} failed: ${String(error)}`,
          );
          invalid(transitionId);
          return;
        }
        if (transitionId !== 0)
          uplink.onJson(userId, DAVE_OP.readyForTransition, { transition_id: transitionId });
        return;
      }
      default:
        return;
    }
  };

  const onJson = (op: number, d: Record<string, unknown>): void => {
    if (op === DAVE_OP.clientsConnect) {
      for (const id of (d.user_ids as string[] | undefined) ?? []) recognised.add(String(id));
    } else if (op === DAVE_OP.clientDisconnect) {
      recognised.delete(String(d.user_id));
    } else if (op === DAVE_OP.prepareEpoch && Number(d.epoch) === 1) {
      session.reinit(DAVE_VERSION, userId, channelId);
      sendKeyPackage();
    }
  };

  return {
    userId,
    client: {
      userId,
      sendBinary: (op, payload) => later(() => onBinary(op, Buffer.from(payload))),
      sendJson: (op, d) => later(() => onJson(op, (d ?? {}) as Record<string, unknown>)),
    },
    decrypt: (payload) => {
      try {
        return { ok: true, opus: session.decrypt(botUserId, MEDIA_AUDIO, payload) };
      } catch (error) {
        return { ok: false, error: errorKind(error) };
      }
    },
    epoch: () => session.epoch ?? 0n,
    welcomedAt: () => welcomedAt,
    close: () => {
      closed = true;
      try {
        session.reset();
      } catch {
        // Already reset.
      }
    },
  };
}

/** The davey error's kind (`NoValidCryptorFound`, `UnencryptedWhenPassthroughDisabled`...), not its prose. */
function errorKind(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // `Failed to decrypt: DecryptionFailed(NoValidCryptorFound { ... })`: the innermost variant names the cause.
  const words = message.split('{')[0]?.match(/[A-Z][a-z]+(?:[A-Z][a-z]*)+/g) ?? [];
  return words.at(-1) ?? message;
}
