/**
 * What the soak checks about each utterance and each server, from outside Herald: every `/speak` was answered,
 * and then heard or the member told why (a follow-up, a refusal, a sentence in the channel, or a /skip, /stop
 * or /leave someone ran); and no server sat silent with an unheard `/speak` waiting.
 */

/** How a `/speak` ended. */
export type Outcome =
  | 'heard'
  /** Refused in the reply (not in voice, queue full, budget, another channel, …). */
  | 'refused'
  /** Accepted, then a follow-up said why it was not said. */
  | 'failed-told'
  /** Accepted, then the session ended with a sentence in the channel (kicked, could not connect, …). */
  | 'ended-told'
  /** Dropped by a /skip, /stop or /leave a member ran. */
  | 'dropped'
  /** Violations: */
  | 'unanswered'
  | 'not-heard-not-told';

/** One `/speak` the soak sent. */
export interface SpeakItem {
  readonly guild: number;
  readonly tag: string;
  readonly tone: number;
  readonly sentAt: number;
  acceptedAt: number | undefined;
  /** Frames of its voice heard while it was the oldest of its voice waiting. */
  frames: number;
  outcome: Outcome | undefined;
  resolvedAt: number | undefined;
  /** When a later utterance of the server was heard while this one had no frame: it must be told soon. */
  passedOverAt: number | undefined;
  followUps: () => number;
  refusal: string | undefined;
}

/** Frames that make an utterance "heard": more than a stray frame or two after a cut. */
export const HEARD_FRAMES = 3;
/** How long a passed-over utterance may wait for its follow-up before it counts as neither heard nor told. */
export const TELL_GRACE_MS = 20_000;

/** A server's view: what it waits for, when it last made progress, and when a fault excuses its silence. */
export interface ServerTrack {
  readonly index: number;
  readonly items: SpeakItem[];
  lastFrameAt: number;
  lastProgressAt: number;
  /** Silence is excused until then: a fault that Herald answers with a bounded wait (rejoin, TTS timeout). */
  hinderedUntil: number;
  /** /skip answers "Skipped." excuse this many passed-over utterances. */
  skipTokens: number;
  silentSince: number | undefined;
  stuckSince: number | undefined;
}

/** An incident: a server with an unheard `/speak` and no progress for longer than the threshold. */
export interface SilentIncident {
  readonly guild: number;
  readonly kind: 'silent' | 'stuck';
  readonly at: number;
  readonly waitedMs: number;
  readonly pending: number;
}

/** Options of {@link createTracker}. */
export interface TrackerOptions {
  readonly servers: number;
  /** Silence with an unheard `/speak`, outside any fault's bounded wait, that counts as an incident. */
  readonly silentMs: number;
  /** Silence with an unheard `/speak`, faults or not, that counts as a stuck server. */
  readonly stuckMs: number;
}

/** The soak's bookkeeping; `now` is always passed in, so every decision is replayable. */
export function createTracker(options: TrackerOptions) {
  const servers: ServerTrack[] = Array.from({ length: options.servers }, (_, index) => ({
    index,
    items: [],
    lastFrameAt: 0,
    lastProgressAt: 0,
    hinderedUntil: 0,
    skipTokens: 0,
    silentSince: undefined,
    stuckSince: undefined,
  }));
  const all: SpeakItem[] = [];
  const incidents: SilentIncident[] = [];
  const serverOf = (guild: number): ServerTrack => servers[guild] as ServerTrack;

  const resolve = (item: SpeakItem, outcome: Outcome, now: number): void => {
    if (item.outcome !== undefined) return;
    item.outcome = outcome;
    item.resolvedAt = now;
    const server = serverOf(item.guild);
    const at = server.items.indexOf(item);
    if (at >= 0) server.items.splice(at, 1);
    server.lastProgressAt = now;
  };

  /** Accepted and not yet passed over: what the server still owes a listener. */
  const waiting = (server: ServerTrack): SpeakItem[] =>
    server.items.filter((item) => item.acceptedAt !== undefined && item.passedOverAt === undefined);

  return {
    servers,
    all,
    incidents,
    /** A `/speak` is on its way. */
    sent(
      item: Omit<SpeakItem, 'acceptedAt' | 'frames' | 'outcome' | 'resolvedAt' | 'passedOverAt'>,
    ): SpeakItem {
      const full: SpeakItem = {
        ...item,
        acceptedAt: undefined,
        frames: 0,
        outcome: undefined,
        resolvedAt: undefined,
        passedOverAt: undefined,
      };
      all.push(full);
      serverOf(item.guild).items.push(full);
      return full;
    },
    accepted(item: SpeakItem, now: number): void {
      item.acceptedAt = now;
    },
    refused(item: SpeakItem, reason: string, now: number): void {
      item.refusal = reason;
      resolve(item, 'refused', now);
    },
    unanswered(item: SpeakItem, now: number): void {
      resolve(item, 'unanswered', now);
    },
    /** A frame of `tone` was heard in the server: it belongs to the oldest accepted utterance of that voice. */
    frame(guild: number, tone: number | undefined, now: number): void {
      const server = serverOf(guild);
      server.lastFrameAt = now;
      server.lastProgressAt = now;
      if (tone === undefined) return;
      const item = server.items.find(
        (candidate) => candidate.acceptedAt !== undefined && candidate.tone === tone,
      );
      if (!item) return;
      item.frames += 1;
      if (item.frames < HEARD_FRAMES) return;
      // Herald's queue is first in, first out: whatever was accepted before and never sounded was dropped.
      for (const earlier of server.items) {
        if (earlier === item) break;
        if (earlier.acceptedAt !== undefined && earlier.frames === 0 && earlier.passedOverAt === undefined) {
          earlier.passedOverAt = now;
        }
      }
      resolve(item, 'heard', now);
    },
    /** A sentence in the server's channel ended its session: everything accepted so far was told. */
    sessionEnded(guild: number, now: number): void {
      for (const item of [...serverOf(guild).items]) {
        if (item.acceptedAt !== undefined) resolve(item, 'ended-told', now);
      }
    },
    /** /stop or /leave answered: everything accepted before it was sent is dropped on purpose. */
    cleared(guild: number, sentAt: number, now: number): void {
      for (const item of [...serverOf(guild).items]) {
        if (item.acceptedAt !== undefined && item.acceptedAt <= sentAt) resolve(item, 'dropped', now);
      }
    },
    /** /skip answered "Skipped.": the utterance playing (or due) was dropped on purpose. */
    skipped(guild: number, now: number): void {
      const server = serverOf(guild);
      const playing = server.items.find((item) => item.acceptedAt !== undefined && item.frames > 0);
      if (playing) resolve(playing, 'dropped', now);
      else server.skipTokens += 1;
    },
    hinder(guild: number | 'all', until: number): void {
      for (const server of guild === 'all' ? servers : [serverOf(guild)]) {
        server.hinderedUntil = Math.max(server.hinderedUntil, until);
      }
    },
    /** Follow-ups, passed-over utterances and silence, checked once a tick. */
    tick(now: number): void {
      for (const server of servers) {
        for (const item of [...server.items]) {
          if (item.acceptedAt === undefined) continue;
          if (item.followUps() > 0) {
            resolve(item, 'failed-told', now);
            continue;
          }
          if (item.passedOverAt === undefined) continue;
          if (item.frames > 0) resolve(item, 'heard', now);
          else if (server.skipTokens > 0) {
            server.skipTokens -= 1;
            resolve(item, 'dropped', now);
          } else if (now - item.passedOverAt > TELL_GRACE_MS) resolve(item, 'not-heard-not-told', now);
        }
        const owed = waiting(server);
        const oldest = owed[0];
        if (!oldest) {
          server.silentSince = undefined;
          server.stuckSince = undefined;
          continue;
        }
        const quietFrom = Math.max(server.lastProgressAt, oldest.acceptedAt ?? now);
        const excusedFrom = Math.max(quietFrom, server.hinderedUntil);
        if (now - excusedFrom > options.silentMs && server.silentSince === undefined) {
          server.silentSince = now;
          incidents.push({
            guild: server.index,
            kind: 'silent',
            at: now,
            waitedMs: now - excusedFrom,
            pending: owed.length,
          });
        } else if (now - excusedFrom <= options.silentMs) server.silentSince = undefined;
        if (now - quietFrom > options.stuckMs && server.stuckSince === undefined) {
          server.stuckSince = now;
          incidents.push({
            guild: server.index,
            kind: 'stuck',
            at: now,
            waitedMs: now - quietFrom,
            pending: owed.length,
          });
        } else if (now - quietFrom <= options.stuckMs) server.stuckSince = undefined;
      }
    },
    /** At the end: anything accepted and still unresolved was neither heard nor told. */
    finish(now: number): void {
      for (const server of servers) {
        for (const item of [...server.items]) {
          if (item.acceptedAt === undefined) resolve(item, 'unanswered', now);
          else if (item.frames > 0) resolve(item, 'heard', now);
          else if (server.skipTokens > 0) {
            server.skipTokens -= 1;
            resolve(item, 'dropped', now);
          } else resolve(item, 'not-heard-not-told', now);
        }
      }
    },
  };
}

/** What {@link createTracker} returns. */
export type Tracker = ReturnType<typeof createTracker>;
