/**
 * The voice gateway's side of DAVE for one media session (the bot's voice channel): it announces clients
 * (ops 11/13), proposes Adds and Removes as the MLS external sender (op 27), takes the first valid commit per
 * epoch and relays it (op 29 to members holding the group, op 30 to the welcomed only), then runs the
 * transition (op 23 from everyone, then op 22). Flow and traps: /work/shared/dave-facts.md §5–6.
 */
import {
  createExternalSender,
  type ExternalSender,
  externalProposal,
  parseCommitWelcome,
  vector,
} from './dave-mls.ts';
import { DAVE_OP, type DaveClient, type DaveEvent } from './dave-protocol.ts';

/** Deliberate DAVE misbehaviour for one group (each one-shot). */
export interface DaveGroupFaults {
  /** Sends `userId` an Add proposal for a user it was never told about (no op 11 first). */
  proposeUnknownUser(userId: string, keyPackage: Buffer): void;
  /** Sends `userId` a commit (op 29) that is not a valid MLS message. */
  malformedCommit(userId: string): void;
  /** Sends `userId` a welcome (op 30) that is not a valid MLS message. */
  malformedWelcome(userId: string): void;
  /** Sends `userId` an execute (op 22) for a transition never prepared, and a prepare (op 21) never executed. */
  invalidTransition(userId: string): void;
  /** Ignores the next key package from `userId`, as a gateway that rejects it. */
  rejectNextKeyPackage(userId: string): void;
}

/** The gateway-side DAVE group of one media session. */
export interface DaveGroup {
  /** A client entered the media session (announced with op 11, sent op 25). */
  join(client: DaveClient): void;
  /** A client left the media session (op 13 to the others, then Remove or the sole-member reset). */
  leave(userId: string): void;
  /** A binary message from `userId` (op 26 key package, op 28 commit/welcome). */
  onBinary(userId: string, op: number, payload: Buffer): void;
  /** A JSON message from `userId` (op 23 ready for transition, op 31 invalid commit/welcome). */
  onJson(userId: string, op: number, d: Record<string, unknown>): void;
  /** The current MLS epoch (0 while no group is established). */
  readonly epoch: bigint;
  /** The users holding the group now. */
  members(): string[];
  /** Commits accepted and ignored, key packages rejected, op 31s received, sole-member resets, for tests. */
  readonly stats: {
    accepted: number;
    ignored: number;
    rejectedKeyPackages: number;
    invalidations: number;
    soleMemberResets: number;
  };
  /** True when a group is established, no change is under way and every client holds a leaf. */
  settled(): boolean;
  readonly faults: DaveGroupFaults;
  /** Forgets everything; sends nothing. */
  close(): void;
}

const PROTOCOL_VERSION = 1;

interface ClientState {
  readonly client: DaveClient;
  keyPackage: Buffer | undefined;
  /** Leaf index while holding the group. */
  leaf: number | undefined;
}

/** A round of proposals waiting for its first valid commit, then its transition. */
interface Change {
  readonly epoch: bigint;
  /** Per recipient: the refs it was sent and the users its commit adds, in proposal order. */
  readonly sent: Map<string, { refs: Buffer[]; adds: string[]; removes: number[] }>;
  /** Set once a commit won: the transition id and who must still answer op 23. */
  transition: { id: number; waiting: Set<string>; participants: Set<string> } | undefined;
}

const debug = (line: string): void => {
  if (process.env.DAVE_DEBUG) console.log(`${performance.now().toFixed(1)} dave group: ${line}`);
};

/** Creates the group of the media session in `channelId`. */
export function createDaveGroup(channelId: string, onEvent?: (event: DaveEvent) => void): DaveGroup {
  const sender: ExternalSender = createExternalSender();
  const clients = new Map<string, ClientState>();
  /** leaves[i]: the user holding leaf i, or undefined for a blank leaf. */
  let leaves: (string | undefined)[] = [];
  let epoch = 0n;
  let change: Change | undefined;
  let nextTransitionId = 1;
  let closed = false;
  const rejectKeyPackage = new Set<string>();
  const stats = { accepted: 0, ignored: 0, rejectedKeyPackages: 0, invalidations: 0, soleMemberResets: 0 };

  const trace = (kind: DaveEvent['kind'], userId?: string): void =>
    onEvent?.({ at: performance.now(), channelId, kind, ...(userId === undefined ? {} : { userId }) });
  const established = (): boolean => epoch > 0n;
  const holders = (): string[] => leaves.filter((u): u is string => u !== undefined);
  /** Leaves whose user left or re-initialised (its client no longer holds that leaf). */
  const staleLeaves = (): number[] =>
    leaves.flatMap((u, i) => (u !== undefined && clients.get(u)?.leaf !== i ? [i] : []));

  const forget = (): void => {
    leaves = [];
    epoch = 0n;
    change = undefined;
    for (const state of clients.values()) state.leaf = undefined;
  };

  /** Starts the next change if none is under way: removes first, then adds, or the sole-member reset. */
  const reconcile = (): void => {
    if (closed || change) return;
    if (!established()) {
      const ready = [...clients.values()].filter((s) => s.keyPackage);
      if (ready.length < 2) return;
      // Every client holds its own pending group at epoch 0 and is sent an Add for each other client.
      const round: Change = { epoch: 0n, sent: new Map(), transition: undefined };
      for (const recipient of ready) {
        const others = ready.filter((s) => s !== recipient);
        propose(round, [recipient], others, []);
      }
      change = round;
      return;
    }
    const stale = staleLeaves();
    const members = [...clients.values()].filter((s) => s.leaf !== undefined);
    if (stale.length > 0) {
      if (members.length <= 1) {
        soleMemberReset(members[0]);
        return;
      }
      const round: Change = { epoch, sent: new Map(), transition: undefined };
      propose(round, members, [], stale);
      change = round;
      return;
    }
    const joining = [...clients.values()].filter((s) => s.leaf === undefined && s.keyPackage);
    if (joining.length === 0 || members.length === 0) return;
    const round: Change = { epoch, sent: new Map(), transition: undefined };
    propose(round, members, joining, []);
    change = round;
  };

  /**
   * Sends `recipients` Add and Remove proposals. In an established group every member must get the very same
   * proposal messages (a commit cites them by reference, and ECDSA signatures differ each time they are made);
   * before establishment each client proposes into its own pending group.
   */
  const propose = (
    round: Change,
    recipients: ClientState[],
    adds: ClientState[],
    removes: number[],
  ): void => {
    const proposals = [
      ...removes.map((leaf) => externalProposal(sender, channelId, round.epoch, { remove: leaf })),
      ...adds.map((s) => externalProposal(sender, channelId, round.epoch, { add: s.keyPackage as Buffer })),
    ];
    const body = Buffer.concat(proposals.map((p) => p.message));
    for (const recipient of recipients) {
      debug(
        `epoch ${round.epoch}: to ${recipient.client.userId.slice(-4)} add [${adds.map((a) => a.client.userId.slice(-4))}] remove [${removes}]`,
      );
      round.sent.set(recipient.client.userId, {
        refs: proposals.map((p) => p.ref),
        adds: adds.map((s) => s.client.userId),
        removes,
      });
      // u8 operation 0 (append) ‖ proposals<V>
      recipient.client.sendBinary(DAVE_OP.proposals, Buffer.concat([Buffer.from([0]), vector(body)]));
    }
    trace('proposals');
  };

  const soleMemberReset = (last: ClientState | undefined): void => {
    debug(`sole member reset of ${last?.client.userId.slice(-4)}`);
    trace('reset', last?.client.userId);
    forget();
    if (!last) return;
    stats.soleMemberResets += 1;
    last.keyPackage = undefined;
    // The last member re-initialises (and sends a new key package); the next joiner starts a group afresh.
    last.client.sendJson(DAVE_OP.prepareEpoch, { protocol_version: PROTOCOL_VERSION, epoch: 1 });
    last.client.sendJson(DAVE_OP.prepareTransition, { protocol_version: PROTOCOL_VERSION, transition_id: 0 });
  };

  const onCommit = (userId: string, payload: Buffer): void => {
    const round = change;
    const sent = round?.sent.get(userId);
    let parsed: ReturnType<typeof parseCommitWelcome>;
    try {
      parsed = parseCommitWelcome(payload);
    } catch {
      stats.ignored += 1;
      return;
    }
    // The first commit of the round's epoch citing exactly what its author was sent wins; the rest are late.
    if (
      !round ||
      !sent ||
      round.transition ||
      parsed.epoch !== round.epoch ||
      parsed.refs.length !== sent.refs.length ||
      !parsed.refs.every((ref, i) => ref.equals(sent.refs[i] as Buffer))
    ) {
      stats.ignored += 1;
      return;
    }
    stats.accepted += 1;
    debug(`commit from ${userId.slice(-4)} accepted at epoch ${parsed.epoch}`);
    const committer = clients.get(userId);
    if (!committer) return;
    // Who holds the group at the commit's epoch: before establishment only the committer.
    const holding = established()
      ? [...clients.values()].filter((s) => s.leaf !== undefined && !sent.removes.includes(s.leaf))
      : [committer];
    if (!established()) {
      leaves = [userId];
      committer.leaf = 0;
    }
    for (const leaf of sent.removes) leaves[leaf] = undefined;
    while (leaves.length > 0 && leaves.at(-1) === undefined) leaves.pop();
    const welcomed: ClientState[] = [];
    for (const added of sent.adds) {
      const state = clients.get(added);
      if (!state) continue;
      const blank = leaves.indexOf(undefined);
      const leaf = blank === -1 ? leaves.length : blank;
      leaves[leaf] = added;
      state.leaf = leaf;
      welcomed.push(state);
    }
    epoch = round.epoch + 1n;
    const id = nextTransitionId;
    nextTransitionId = (nextTransitionId % 0xffff) + 1;
    const participants = new Set([...holding, ...welcomed].map((s) => s.client.userId));
    round.transition = { id, waiting: new Set(participants), participants };
    const tid = Buffer.alloc(2);
    tid.writeUInt16BE(id);
    for (const s of holding) s.client.sendBinary(DAVE_OP.announceCommit, Buffer.concat([tid, parsed.commit]));
    if (parsed.welcome) {
      for (const s of welcomed) {
        // The whole Welcome goes to each welcomed member: davey finds its own entry by KeyPackageRef.
        s.client.sendBinary(DAVE_OP.welcome, Buffer.concat([tid, parsed.welcome]));
      }
    }
    trace('commit', userId);
  };

  const maybeExecute = (): void => {
    const transition = change?.transition;
    if (!transition || transition.waiting.size > 0) return;
    for (const userId of transition.participants) {
      clients.get(userId)?.client.sendJson(DAVE_OP.executeTransition, { transition_id: transition.id });
    }
    trace('execute');
    change = undefined;
    reconcile();
  };

  /** `userId` re-initialised (op 31, or a new key package while in the group): its leaf is now stale. */
  const reinitialised = (state: ClientState): void => {
    state.leaf = undefined;
    state.keyPackage = undefined;
    abandon(state.client.userId);
  };

  /** Drops `userId` from a change under way: it no longer answers, so nobody waits for it. */
  const abandon = (userId: string): void => {
    const round = change;
    if (!round) return;
    if (round.transition) {
      round.transition.waiting.delete(userId);
      round.transition.participants.delete(userId);
      maybeExecute();
      return;
    }
    // A round not yet committed is revoked (its proposals would stay pending in every client) and re-planned.
    change = undefined;
    for (const [recipient, sent] of round.sent) {
      if (recipient === userId) continue;
      const refs = Buffer.concat(sent.refs.map((ref) => vector(ref)));
      clients
        .get(recipient)
        ?.client.sendBinary(DAVE_OP.proposals, Buffer.concat([Buffer.from([1]), vector(refs)]));
    }
  };

  return {
    get epoch() {
      return epoch;
    },
    stats,
    members: holders,
    settled: () =>
      established() &&
      !change &&
      staleLeaves().length === 0 &&
      [...clients.values()].every((s) => s.leaf !== undefined),
    join: (client) => {
      if (closed) return;
      const others = [...clients.keys()];
      clients.set(client.userId, { client, keyPackage: undefined, leaf: undefined });
      if (others.length > 0) client.sendJson(DAVE_OP.clientsConnect, { user_ids: others });
      for (const userId of others) {
        clients.get(userId)?.client.sendJson(DAVE_OP.clientsConnect, { user_ids: [client.userId] });
      }
      client.sendBinary(DAVE_OP.externalSender, sender.package);
    },
    leave: (userId) => {
      const state = clients.get(userId);
      if (!state || closed) return;
      clients.delete(userId);
      for (const other of clients.values()) {
        other.client.sendJson(DAVE_OP.clientDisconnect, { user_id: userId });
      }
      abandon(userId);
      if (clients.size === 0) forget();
      reconcile();
    },
    onBinary: (userId, op, payload) => {
      const state = clients.get(userId);
      if (!state || closed) return;
      debug(`op ${op} from ${userId.slice(-4)} (${payload.length} bytes)`);
      if (op === DAVE_OP.keyPackage) {
        trace('key-package', userId);
        if (rejectKeyPackage.delete(userId)) {
          stats.rejectedKeyPackages += 1;
          return;
        }
        if (state.leaf !== undefined || change?.sent.has(userId)) reinitialised(state);
        state.keyPackage = Buffer.from(payload);
        reconcile();
      } else if (op === DAVE_OP.commitWelcome) {
        onCommit(userId, Buffer.from(payload));
      }
    },
    onJson: (userId, op, d) => {
      const state = clients.get(userId);
      if (!state || closed) return;
      debug(`op ${op} from ${userId.slice(-4)} ${JSON.stringify(d)}`);
      if (op === DAVE_OP.readyForTransition) {
        const transition = change?.transition;
        if (transition && transition.id === Number(d.transition_id)) {
          trace('ready', userId);
          transition.waiting.delete(userId);
          maybeExecute();
        }
      } else if (op === DAVE_OP.invalidCommitWelcome) {
        stats.invalidations += 1;
        reinitialised(state);
        reconcile();
      }
    },
    faults: {
      proposeUnknownUser: (userId, keyPackage) => {
        const target = clients.get(userId);
        if (!target) return;
        const { message } = externalProposal(sender, channelId, epoch, { add: keyPackage });
        target.client.sendBinary(DAVE_OP.proposals, Buffer.concat([Buffer.from([0]), vector(message)]));
      },
      malformedCommit: (userId) => {
        clients.get(userId)?.client.sendBinary(DAVE_OP.announceCommit, Buffer.from([0, 0x7f, 1, 2, 3]));
      },
      malformedWelcome: (userId) => {
        clients.get(userId)?.client.sendBinary(DAVE_OP.welcome, Buffer.from([0, 0x7e, 9, 9, 9]));
      },
      invalidTransition: (userId) => {
        const target = clients.get(userId)?.client;
        target?.sendJson(DAVE_OP.executeTransition, { transition_id: 0xfffe });
        target?.sendJson(DAVE_OP.prepareTransition, {
          protocol_version: PROTOCOL_VERSION,
          transition_id: 0xfffd,
        });
      },
      rejectNextKeyPackage: (userId) => {
        rejectKeyPackage.add(userId);
      },
    },
    close: () => {
      closed = true;
      clients.clear();
      forget();
    },
  };
}
