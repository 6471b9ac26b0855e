/**
 * Paces voice joins under Discord's gateway rate. A shard may send about 120 gateway commands a minute; beyond
 * that discord.js holds every send (joins, heartbeats, presence) silently until the window resets, so a join
 * asked in a burst of 200 could wait up to a minute while its member was told "Speaking now" and its session gave
 * up after 15 s. Here joins wait in a visible FIFO instead: each is sent when the sliding one-minute window has
 * room, and anyone can ask how long a join asked now would wait.
 *
 * It also bounds the handshakes under way: a join sent opens a voice WebSocket, a UDP discovery, a TLS-free but
 * CPU-hungry key exchange (and DAVE's MLS): 114 at once on two cores took longer than the 15 s connect deadline
 * for some, which were paid for and never heard. At most {@link DEFAULT_MAX_HANDSHAKES} are in flight; the next
 * join is sent as one completes (ready or failed), which costs no throughput at the gateway's rate.
 *
 * Leaves are gateway commands in the same window, but nobody waits for one: Herald has already stopped playing
 * and only its presence in the channel remains. They go after every waiting join, as the window has room. Sent at
 * once, 400 leaves (400 members leaving, or 400 sessions idle together) filled discord.js's hidden queue for
 * three minutes, and every join asked meanwhile sat behind them until its connect deadline failed it.
 */

/** Joins one shard sends in any 60 s when none is configured: under discord.js's 115, leaving room for heartbeats,
 *  leaves and presence. */
export const DEFAULT_JOINS_PER_MINUTE = 90;

/** Voice handshakes in flight at once when none is configured. */
export const DEFAULT_MAX_HANDSHAKES = 8;

const WINDOW_MS = 60_000;
/** A handshake nobody reported finished frees its slot after this, so a lost report cannot stall every join. */
const HANDSHAKE_LEASE_MS = 20_000;

/** A join waiting in a {@link JoinQueue}. */
export interface QueuedJoin {
  /** When it is expected to be sent (`Date.now()` clock); now or earlier when it was sent at once. */
  readonly dueAt: number;
  /** True once it was sent to Discord (held by the rate or by the handshakes in flight until then). */
  readonly sent: boolean;
  /** Takes it out of the queue if not yet sent (the session ended, or the library sent a newer join). */
  cancel(): void;
  /** Its handshake finished (the connection is ready, or failed): the next join may be sent. Idempotent. */
  done(): void;
}

/** The shard's voice-join pacer; one per gateway connection, shared by every server on it. */
export interface JoinQueue {
  /**
   * Runs `send` now if the window has room, else when it has; FIFO. Sending it drops a leave still waiting for the
   * same `key` (the server): the join supersedes it.
   */
  schedule(send: () => void, key?: string): QueuedJoin;
  /**
   * Runs a leave's `send` now if no join waits and the window has room, else after the waiting joins, as the
   * window has room. A newer leave for the same `key` replaces one still waiting.
   */
  leave(key: string, send: () => void): void;
  /** How long, in ms, a join scheduled now would wait. */
  estimateWaitMs(): number;
  /** Joins waiting. */
  readonly waiting: number;
  /** Leaves waiting behind the joins. */
  readonly leavesWaiting: number;
  /** Joins sent whose handshake has not finished. */
  readonly handshaking: number;
  /**
   * True under a burst (joins waiting, or handshakes at the bound): a join may then take long enough to fail, so
   * nothing should be paid for before its connection is ready.
   */
  readonly busy: boolean;
  /** Cancels every waiting join and sends every waiting leave (shutdown). */
  clear(): void;
}

/** Options of {@link createJoinQueue}. */
export interface JoinQueueOptions {
  /** Joins sent in any 60 s; default {@link DEFAULT_JOINS_PER_MINUTE}. */
  readonly perMinute?: number;
  /** Handshakes in flight at once; default {@link DEFAULT_MAX_HANDSHAKES}. */
  readonly maxHandshakes?: number;
}

/** Creates a {@link JoinQueue}; uses `Date.now` and `setTimeout` (fake timers in tests). */
export function createJoinQueue(options: JoinQueueOptions = {}): JoinQueue {
  const limit = Math.max(1, Math.floor(options.perMinute ?? DEFAULT_JOINS_PER_MINUTE));
  const maxHandshakes = Math.max(1, Math.floor(options.maxHandshakes ?? DEFAULT_MAX_HANDSHAKES));
  /** Handshakes in flight: each entry frees its slot once (done, or its lease ran out). */
  const handshakes = new Set<Entry>();
  /** Send times within the last minute, oldest first. */
  const sent: number[] = [];
  interface Entry {
    send: () => void;
    key: string | undefined;
    cancelled: boolean;
    finished: boolean;
    sent: boolean;
    lease?: NodeJS.Timeout;
  }
  const waiting: Entry[] = [];
  /** Leaves not yet sent, by server, oldest first. */
  const leaves = new Map<string, () => void>();
  let timer: NodeJS.Timeout | undefined;

  const prune = (now: number): void => {
    while (sent.length > 0 && (sent[0] ?? 0) <= now - WINDOW_MS) sent.shift();
  };

  /** When the `k`-th join from now (0-based, counting those waiting) can be sent. */
  const slotAt = (k: number, now: number): number => {
    prune(now);
    const free = limit - sent.length;
    if (k < free) return now;
    // The window then holds `limit` sends: those recorded, and the free room taken now. Each reopens a slot a
    // minute after it was sent, and the join sent in that slot reopens one a minute later again.
    const beyond = k - free;
    const rounds = Math.floor(beyond / limit);
    const index = beyond % limit;
    const base = index < sent.length ? (sent[index] ?? now) : now;
    return base + WINDOW_MS * (rounds + 1);
  };

  const drain = (): void => {
    clearTimeout(timer);
    timer = undefined;
    const now = Date.now();
    prune(now);
    while (waiting.length > 0 && sent.length < limit && handshakes.size < maxHandshakes) {
      const next = waiting.shift();
      if (!next || next.cancelled) continue;
      sent.push(now);
      next.sent = true;
      if (next.key !== undefined) leaves.delete(next.key);
      if (!next.finished) {
        handshakes.add(next);
        next.lease = setTimeout(() => finish(next), HANDSHAKE_LEASE_MS);
        next.lease.unref?.();
      }
      next.send();
    }
    while (waiting[0]?.cancelled) waiting.shift();
    const joinsWaiting = waiting.some((entry) => !entry.cancelled);
    if (!joinsWaiting) {
      for (const [key, send] of leaves) {
        if (sent.length >= limit) break;
        leaves.delete(key);
        sent.push(now);
        send();
      }
    }
    // Held by the window (not by the handshakes in flight, whose finishing drains again): wait for its room.
    if ((joinsWaiting && handshakes.size < maxHandshakes) || (!joinsWaiting && leaves.size > 0)) {
      const oldest = sent[0] ?? now;
      timer = setTimeout(drain, Math.max(0, oldest + WINDOW_MS - now));
    }
  };

  function finish(entry: Entry): void {
    entry.finished = true;
    clearTimeout(entry.lease);
    if (handshakes.delete(entry)) drain();
  }

  return {
    schedule(send, key) {
      const dueAt = slotAt(waiting.filter((entry) => !entry.cancelled).length, Date.now());
      const entry: Entry = { send, key, cancelled: false, finished: false, sent: false };
      waiting.push(entry);
      drain();
      return {
        dueAt,
        get sent() {
          return entry.sent;
        },
        cancel() {
          entry.cancelled = true;
          finish(entry);
        },
        done: () => finish(entry),
      };
    },
    leave(key, send) {
      leaves.delete(key);
      leaves.set(key, send);
      drain();
    },
    estimateWaitMs() {
      const now = Date.now();
      return slotAt(waiting.filter((entry) => !entry.cancelled).length, now) - now;
    },
    get waiting() {
      return waiting.filter((entry) => !entry.cancelled).length;
    },
    get leavesWaiting() {
      return leaves.size;
    },
    get handshaking() {
      return handshakes.size;
    },
    get busy() {
      return handshakes.size >= maxHandshakes || waiting.some((entry) => !entry.cancelled);
    },
    clear() {
      for (const entry of waiting) entry.cancelled = true;
      waiting.length = 0;
      const asked = [...leaves.values()];
      leaves.clear();
      for (const send of asked) send();
      for (const entry of handshakes) clearTimeout(entry.lease);
      handshakes.clear();
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
