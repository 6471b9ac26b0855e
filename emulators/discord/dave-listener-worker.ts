/**
 * The members' DAVE clients, in a worker thread: each member is a davey session that answers the gateway as the
 * Discord client does and decrypts the bot's frames. On Discord every member runs on its own machine, so their
 * MLS work (a commit per proposal round, a commit or welcome per change) costs the bot nothing; run in the bot's
 * event loop it would delay the bot's own DAVE handshake by several milliseconds per member. Messages are
 * handled in arrival order, so a frame is decrypted with whatever group its listener holds when it arrives.
 * Protocol with the main thread: {@link ToWorker} and {@link FromWorker} in `dave-listener.ts`.
 */
import { performance } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import Davey from '@snazzah/davey';
import type { FromWorker, ToWorker } from './dave-listener.ts';
import { DAVE_OP } from './dave-protocol.ts';

// davey's const enums cannot be imported under isolatedModules; the values are fixed by the protocol.
const MEDIA_AUDIO = 0 as Davey.MediaType;
const DAVE_VERSION = 1;

interface Member {
  readonly userId: string;
  readonly channelId: string;
  readonly botUserId: string;
  readonly session: Davey.DAVESession;
  readonly recognised: Set<string>;
  /** It holds an established group (since its first commit or welcome after (re-)initialising). */
  holding: boolean;
}

const port = parentPort;
if (!port) throw new Error('dave-listener-worker: not started as a worker thread');
const members = new Map<number, Member>();
/** Wall-clock ms: the main thread's `performance.now()` has another origin. */
const now = (): number => performance.timeOrigin + performance.now();
const post = (message: FromWorker): void => port.postMessage(message);

const sendKeyPackage = (id: number, m: Member): void =>
  post({ t: 'binary', id, op: DAVE_OP.keyPackage, payload: m.session.getSerializedKeyPackage() });

/** Runs one MLS step and reports how long it took (for the latency bench's breakdown). */
const timed = <T>(id: number, step: string, run: () => T): T => {
  const start = now();
  try {
    return run();
  } finally {
    post({ t: 'mls', id, step, startedAt: start, ms: now() - start });
  }
};

const onBinary = (id: number, m: Member, op: number, payload: Buffer): void => {
  switch (op) {
    case DAVE_OP.externalSender:
      m.session.setExternalSender(payload);
      sendKeyPackage(id, m);
      return;
    case DAVE_OP.proposals: {
      const { commit, welcome } = timed(id, 'proposals', () =>
        m.session.processProposals(
          payload.readUInt8(0) as Davey.ProposalsOperationType,
          payload.subarray(1),
          [...m.recognised],
        ),
      );
      if (commit) {
        post({
          t: 'binary',
          id,
          op: DAVE_OP.commitWelcome,
          payload: welcome ? Buffer.concat([commit, welcome]) : commit,
        });
      }
      return;
    }
    case DAVE_OP.announceCommit:
    case DAVE_OP.welcome: {
      const transitionId = payload.readUInt16BE(0);
      const welcome = op === DAVE_OP.welcome;
      try {
        timed(id, welcome ? 'welcome' : 'commit', () =>
          welcome
            ? m.session.processWelcome(payload.subarray(2))
            : m.session.processCommit(payload.subarray(2)),
        );
      } catch (error) {
        post({ t: 'debug', id, line: `${welcome ? 'welcome' : 'commit'} failed: ${String(error)}` });
        post({ t: 'json', id, op: DAVE_OP.invalidCommitWelcome, d: { transition_id: transitionId } });
        m.session.reinit(DAVE_VERSION, m.userId, m.channelId);
        m.holding = false;
        sendKeyPackage(id, m);
        return;
      }
      const joined = !m.holding;
      m.holding = true;
      post({
        t: 'state',
        id,
        epoch: String(m.session.epoch ?? 0n),
        ...(welcome ? { welcomedAt: now() } : {}),
        ...(joined ? { joinedAt: now() } : {}),
      });
      if (transitionId !== 0)
        post({ t: 'json', id, op: DAVE_OP.readyForTransition, d: { transition_id: transitionId } });
      return;
    }
    default:
      return;
  }
};

const onJson = (id: number, m: Member, op: number, d: Record<string, unknown>): void => {
  if (op === DAVE_OP.clientsConnect) {
    for (const user of (d.user_ids as string[] | undefined) ?? []) m.recognised.add(String(user));
  } else if (op === DAVE_OP.clientDisconnect) {
    m.recognised.delete(String(d.user_id));
  } else if (op === DAVE_OP.prepareEpoch && Number(d.epoch) === 1) {
    m.session.reinit(DAVE_VERSION, m.userId, m.channelId);
    m.holding = false;
    post({ t: 'state', id, epoch: '0' });
    sendKeyPackage(id, m);
  }
};

/** `Failed to decrypt: DecryptionFailed(NoValidCryptorFound { ... })`: the innermost variant names the cause. */
function errorKind(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const words = message.split('{')[0]?.match(/[A-Z][a-z]+(?:[A-Z][a-z]*)+/g) ?? [];
  return words.at(-1) ?? message;
}

const bytes = (data: Uint8Array): Buffer => Buffer.from(data.buffer, data.byteOffset, data.byteLength);

port.on('message', (message: ToWorker) => {
  switch (message.t) {
    case 'create':
      members.set(message.id, {
        userId: message.userId,
        channelId: message.channelId,
        botUserId: message.botUserId,
        session: new Davey.DAVESession(DAVE_VERSION, message.userId, message.channelId),
        recognised: new Set(),
        holding: false,
      });
      return;
    case 'close': {
      const m = members.get(message.id);
      members.delete(message.id);
      try {
        m?.session.reset();
      } catch {
        // Already reset.
      }
      return;
    }
    case 'binary': {
      const m = members.get(message.id);
      if (m) onBinary(message.id, m, message.op, bytes(message.payload));
      return;
    }
    case 'json': {
      const m = members.get(message.id);
      if (m) onJson(message.id, m, message.op, message.d);
      return;
    }
    case 'decrypt': {
      const payload = bytes(message.payload);
      const results = message.ids.map((id): [number, Uint8Array | string] => {
        const m = members.get(id);
        if (!m) return [id, 'Left'];
        try {
          return [id, m.session.decrypt(m.botUserId, MEDIA_AUDIO, payload)];
        } catch (error) {
          return [id, errorKind(error)];
        }
      });
      post({ t: 'decrypted', request: message.request, results });
      return;
    }
  }
});
