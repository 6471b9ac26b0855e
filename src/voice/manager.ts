import {
  ChannelType,
  type Guild,
  PermissionFlagsBits,
  type SendableChannels,
  type VoiceBasedChannel,
  type VoiceState,
} from 'discord.js';
import type { Logger } from '../log.ts';
import type { StartGate } from '../rush/index.ts';
import type { GenerateResult } from '../tts/index.ts';
import type { JoinQueue } from './join-queue.ts';
import { createSynthesisPacing, type SynthesisPacing } from './pacing.ts';
import { QueuedTally } from './queued-tally.ts';
import {
  type DropReason,
  type EnqueueOutcome,
  GuildSession,
  type QueueLimits,
  type SessionEnd,
  type SpeechRequest,
  type Synthesize,
} from './session.ts';
import { onStage, takeStage } from './stage.ts';

export type { EnqueueOutcome };

/** Outcome of {@link VoiceManager.join}: expected results are values, mapped to replies by the caller. */
export type JoinOutcome =
  | { readonly kind: 'joined'; readonly session: GuildSession }
  | { readonly kind: 'already-here'; readonly session: GuildSession }
  | { readonly kind: 'in-other-channel'; readonly channelId: string }
  | { readonly kind: 'missing-permission'; readonly permission: 'View Channel' | 'Connect' | 'Speak' }
  | { readonly kind: 'channel-full' }
  | { readonly kind: 'afk-channel' };

/** Options of {@link VoiceManager}. */
export interface VoiceManagerOptions {
  readonly synthesize: Synthesize;
  readonly logger: Logger;
  readonly idleTimeoutMs: number;
  /** Silence between two queued utterances, in ms. */
  readonly pauseMs?: number;
  /** Up to this many 20 ms frames in one voice packet (see {@link GuildSessionOptions.framesPerPacket}). */
  readonly framesPerPacket?: number;
  readonly connectTimeoutMs?: number;
  /** How much one server and one member may queue; default {@link DEFAULT_QUEUE_LIMITS}. */
  readonly limits?: QueueLimits;
  /** Told of audio that was paid for and will never be played, and why (the ledger records it as wasted). */
  readonly onUnplayed?: (
    result: GenerateResult,
    request: SpeechRequest,
    reason: DropReason,
    guildId: string,
  ) => void;
  /** When to synthesise the next utterance; one estimate shared by every server by default. */
  readonly pacing?: SynthesisPacing;
  /**
   * Told of each server's session as it changes (a join, its queue), at most once per tick, and with null when it
   * ends for good; a shutdown is not an end for good, so what was saved then is finished after the restart.
   */
  readonly onSnapshot?: (guildId: string, snapshot: SessionSnapshot) => void;
  /** Told when a session starts and when it ends (the operations view follows sessions through it). */
  readonly observer?: {
    started(session: GuildSession): void;
    ended(session: GuildSession, reason: SessionEnd): void;
  };
  /** Paces voice joins under the gateway rate (one per shard); none: joins are sent at once. */
  readonly joinQueue?: JoinQueue;
  /** The process's start gate, shared by every server's queue (src/rush); none: every start goes at once. */
  readonly startGate?: StartGate;
}

/** A server's voice session as it stands, for saving across a restart; null once it is over for good. */
export type SessionSnapshot = {
  readonly channelId: string;
  readonly announceChannelId: string | null;
  /** Not yet handed to the player, in order. */
  readonly queue: readonly SpeechRequest[];
} | null;

/** Queue bounds when none are configured: `QUEUE_MAX_PER_SERVER`, `QUEUE_MAX_PER_MEMBER`. */
export const DEFAULT_QUEUE_LIMITS: QueueLimits = { perServer: 50, perMember: 10 };

/** How long "nobody is listening" waits to be said (a deletion in progress is told as a deletion). */
const ALONE_GRACE_MS = 1000;

const REQUIRED: readonly [bigint, 'View Channel' | 'Connect' | 'Speak'][] = [
  [PermissionFlagsBits.ViewChannel, 'View Channel'],
  [PermissionFlagsBits.Connect, 'Connect'],
  [PermissionFlagsBits.Speak, 'Speak'],
];

/** What Herald says in the text channel when a session ends without being asked to. */
const END_MESSAGES: Readonly<Record<SessionEnd, ((channel: string) => string) | undefined>> = {
  left: undefined,
  shutdown: undefined,
  idle: (channel) => `Left ${channel}: nothing to say for a while. Use /speak or /join to bring me back.`,
  alone: (channel) => `Left ${channel}: nobody is listening any more.`,
  kicked: (channel) => `I was disconnected from ${channel}; the queue is cleared.`,
  'channel-deleted': () => 'My voice channel was deleted; the queue is cleared.',
  'lost-speak': (channel) =>
    `I may no longer speak in ${channel} (the Speak permission was taken away), so I left and cleared the queue. Give it back, then use /join.`,
  removed: undefined,
  'connection-failed': (channel) =>
    `I could not connect to ${channel}. Discord did not complete the voice connection; try /join again in a moment.`,
  'connection-lost': (channel) =>
    `I lost the voice connection to ${channel} and could not get it back, so I left. Use /join to try again.`,
};

/** How long a withdrawal for a server Herald is not in voice in is remembered (a restart restores within it). */
const WITHDRAWN_MEMORY_MS = 10 * 60_000;
/** At most this many such withdrawals are remembered, the oldest forgotten first. */
const WITHDRAWN_MEMORY_SIZE = 1_000;

/** One {@link GuildSession} per server; joins, leaves, and follows the voice events that end sessions. */
export class VoiceManager {
  /** Sessions that ended alone a moment ago, whose sentence is not said yet (see #onEnd). */
  readonly #aloneNotices = new Map<string, { readonly channelId: string | null; reason: SessionEnd }>();
  readonly #sessions = new Map<string, { session: GuildSession; announce: SendableChannels | undefined }>();
  /** `guild:key` → until when: withdrawals that arrived while Herald was not in voice in that server. */
  readonly #withdrawnAway = new Map<string, number>();
  readonly #options: VoiceManagerOptions;
  readonly #pacing: SynthesisPacing;
  /** What every session's queue holds unreserved, kept as they change: a /speak reads it without a pass over them. */
  readonly #tally = new QueuedTally();
  readonly #pendingSnapshots = new Set<string>();

  constructor(options: VoiceManagerOptions) {
    this.#options = options;
    this.#pacing = options.pacing ?? createSynthesisPacing();
  }

  /**
   * Characters queued and not yet paid for: the member's in every server, everyone's in this server, and
   * everyone's everywhere (the budget guard counts them as committed).
   */
  queued(guildId: string, userId: string): { member: number; guild: number; all: number } {
    return this.#tally.of(guildId, userId);
  }

  /** The live session of a server, if Herald is in voice there. */
  get(guildId: string): GuildSession | undefined {
    return this.#sessions.get(guildId)?.session;
  }

  /**
   * Joins `channel`, or reports why not. Never hops: if Herald is in another channel of the server, it says so.
   * `announce` is where the session later says why it left.
   */
  join(channel: VoiceBasedChannel, announce?: SendableChannels): JoinOutcome {
    const existing = this.get(channel.guild.id);
    if (existing) {
      return existing.channelId === channel.id
        ? { kind: 'already-here', session: existing }
        : { kind: 'in-other-channel', channelId: existing.channelId ?? channel.id };
    }
    // The server's AFK channel is where Discord moves idle members, and where nobody speaks: Herald never joins it.
    if (channel.guild.afkChannelId === channel.id) return { kind: 'afk-channel' };
    const me = channel.guild.members.me;
    const permissions = me ? channel.permissionsFor(me) : null;
    for (const [flag, permission] of REQUIRED) {
      if (!permissions?.has(flag)) return { kind: 'missing-permission', permission };
    }
    // Discord lets members with Move Members into a full channel; so does Herald's check.
    if (channel.full && !permissions?.has(PermissionFlagsBits.MoveMembers)) return { kind: 'channel-full' };

    const guildId = channel.guild.id;
    const session: GuildSession = new GuildSession({
      guildId,
      channelId: channel.id,
      adapterCreator: channel.guild.voiceAdapterCreator,
      synthesize: this.#options.synthesize,
      pacing: this.#pacing,
      limits: this.#options.limits ?? DEFAULT_QUEUE_LIMITS,
      logger: this.#options.logger,
      ...(this.#options.onUnplayed
        ? {
            onUnplayed: (result: GenerateResult, request: SpeechRequest, reason: DropReason) =>
              this.#options.onUnplayed?.(result, request, reason, guildId),
          }
        : {}),
      idleTimeoutMs: this.#options.idleTimeoutMs,
      ...(this.#options.pauseMs === undefined ? {} : { pauseMs: this.#options.pauseMs }),
      ...(this.#options.framesPerPacket === undefined
        ? {}
        : { framesPerPacket: this.#options.framesPerPacket }),
      ...(this.#options.joinQueue ? { joinQueue: this.#options.joinQueue } : {}),
      ...(this.#options.startGate ? { startGate: this.#options.startGate } : {}),
      tally: this.#tally,
      ...(this.#options.connectTimeoutMs === undefined
        ? {}
        : { connectTimeoutMs: this.#options.connectTimeoutMs }),
      onEnd: (reason) => this.#onEnd(channel.guild, session, reason),
      othersPresent: (): boolean =>
        channel.guild.voiceStates.cache.some(
          (state) => state.channelId === session.channelId && state.id !== channel.client.user.id,
        ),
      membersPresent: (): string[] =>
        channel.guild.voiceStates.cache
          .filter((state) => state.channelId === session.channelId && state.id !== channel.client.user.id)
          .map((state) => state.id),
      onChange: () => this.#snapshotSoon(guildId, session),
      withdrawn: (key) => {
        const until = this.#withdrawnAway.get(`${guildId}:${key}`);
        this.#withdrawnAway.delete(`${guildId}:${key}`);
        return until !== undefined && until > Date.now();
      },
    });
    this.#sessions.set(guildId, { session, announce });
    // Everyone sits down on a stage in the audience: nothing is paid before Herald may speak there.
    if (channel.type === ChannelType.GuildStageVoice) session.setMuted(true);
    this.#snapshotSoon(guildId, session);
    this.#options.observer?.started(session);
    return { kind: 'joined', session };
  }

  /** Leaves the server's voice channel; false when Herald was not in one. */
  leave(guildId: string, reason: SessionEnd = 'left'): boolean {
    const session = this.get(guildId);
    session?.end(reason);
    return session !== undefined;
  }

  /** Follows voice state changes: leave when no human is left, notice being moved. */
  onVoiceStateUpdate(oldState: VoiceState, newState: VoiceState): void {
    const session = this.get(newState.guild.id);
    if (!session) return;
    const me = newState.client.user.id;
    if (newState.id === me) {
      if (newState.channelId === null) return;
      const guildId = newState.guild.id;
      if (newState.channelId !== oldState.channelId) {
        this.#leaveIfAlone(newState.guild);
        if (onStage(newState) && newState.suppress) {
          void takeStage(newState, (text) => this.#say(guildId, text), this.#options.logger);
        }
      }
      // In a stage's audience (suppressed) nobody hears Herald either: one gate for both.
      const suppressed = onStage(newState) && newState.suppress === true;
      this.#onServerMute(guildId, newState.serverMute === true, suppressed);
      return;
    }
    if (oldState.channelId === session.channelId || newState.channelId === session.channelId) {
      this.#leaveIfAlone(newState.guild);
    }
  }

  /**
   * Withdraws the utterance with `key` (a deleted message) in a server. When Herald is not in voice there (a
   * restart is still restoring its queue), the withdrawal is remembered for a while, so a session started or
   * restored later does not say it.
   */
  withdraw(guildId: string, key: string): boolean {
    const session = this.get(guildId);
    if (session) return session.withdraw(key);
    this.#withdrawnAway.set(`${guildId}:${key}`, Date.now() + WITHDRAWN_MEMORY_MS);
    if (this.#withdrawnAway.size > WITHDRAWN_MEMORY_SIZE) {
      this.#withdrawnAway.delete(this.#withdrawnAway.keys().next().value ?? '');
    }
    return false;
  }

  /**
   * Herald's own server mute or stage suppression changed: while either holds nobody hears it, so its session waits
   * (paying nothing) or goes on; a server mute is told to the channel once.
   */
  #onServerMute(guildId: string, muted: boolean, suppressed = false): void {
    const entry = this.#sessions.get(guildId);
    const quiet = muted || suppressed;
    if (!entry || entry.session.muted === quiet) return;
    entry.session.setMuted(quiet);
    if (muted) {
      this.#say(
        guildId,
        'A moderator server-muted me, so nobody can hear me: I am keeping the queue and spend nothing until I am unmuted.',
      );
    }
  }

  /** Says `content` in the session's announce channel, if it has one. */
  #say(guildId: string, content: string): void {
    this.#sessions
      .get(guildId)
      ?.announce?.send({ content, allowedMentions: { parse: [] } })
      .catch((error: unknown) =>
        this.#options.logger.warn('could not say why Herald is quiet', { guild: guildId, err: error }),
      );
  }

  /** A deleted voice channel ends its session. */
  onChannelDelete(channelId: string, guildId: string): void {
    if (this.get(guildId)?.channelId === channelId) this.leave(guildId, 'channel-deleted');
    // Discord empties a deleted channel before its CHANNEL_DELETE, so the session may already have ended as alone:
    // its sentence, not said yet, tells the deletion as what it is.
    const pending = this.#aloneNotices.get(guildId);
    if (pending?.channelId === channelId) pending.reason = 'channel-deleted';
  }

  /**
   * Permissions changed in a server (a role, an overwrite, Herald's roles): a session whose channel no longer lets
   * Herald speak ends, since Discord would mute every frame while the queue is still paid for. Connect alone is not
   * checked: Discord keeps a member that lost it connected, and a later rejoin says what is missing.
   */
  onPermissionsChange(guild: Guild): void {
    const session = this.get(guild.id);
    const channel = guild.channels.cache.get(session?.channelId ?? '');
    const me = guild.members.me;
    if (!session || !channel?.isVoiceBased() || !me) return;
    if (!channel.permissionsFor(me).has(PermissionFlagsBits.Speak)) session.end('lost-speak');
  }

  /** Removal from a server ends its session. */
  onGuildDelete(guildId: string): void {
    this.leave(guildId, 'removed');
  }

  /**
   * The first half of a graceful shutdown: every session plays out the audio already paid for (the utterance
   * being heard, and the one ready after it) and pays for nothing more, for at most `withinMs`. Resolves when all
   * are done or the time is up; {@link destroyAll} then saves the rest.
   */
  async drainAll(withinMs: number): Promise<void> {
    const drains = [...this.#sessions.values()]
      .filter(({ session }) => !session.ended)
      .map(({ session }) => session.drain());
    if (drains.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(drains),
      new Promise((resolve) => {
        timer = setTimeout(resolve, withinMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * Ends every session (shutdown), saving first what each one still had to say. The utterance playing now was
   * heard, at least in part, and is not said again; one already paid for and waiting is (the audio cache serves it).
   */
  destroyAll(): void {
    for (const [guildId, { session, announce }] of this.#sessions) {
      if (session.ended || !session.channelId) continue;
      this.#options.onSnapshot?.(guildId, {
        channelId: session.channelId,
        announceChannelId: announce && 'id' in announce ? announce.id : null,
        queue: session.unheard(),
      });
    }
    for (const guildId of [...this.#sessions.keys()]) this.leave(guildId, 'shutdown');
  }

  #leaveIfAlone(guild: Guild): void {
    // At once: nothing more is paid for a channel nobody listens in (its "nobody is listening" waits a moment: see
    // #onEnd).
    if (this.#isAlone(guild)) this.get(guild.id)?.end('alone');
  }

  /** True when Herald's session in `guild` is in a channel that still exists and has no human in it. */
  #isAlone(guild: Guild): boolean {
    const session = this.get(guild.id);
    const channelId = session?.channelId;
    if (!session || session.ended || !channelId) return false;
    const channel = guild.channels.cache.get(channelId);
    if (!channel?.isVoiceBased()) return false;
    return channel.members.filter((member) => !member.user.bot).size === 0;
  }

  /** Coalesces a session's changes into one snapshot per tick. */
  #snapshotSoon(guildId: string, session: GuildSession): void {
    if (!this.#options.onSnapshot || this.#pendingSnapshots.has(guildId)) return;
    this.#pendingSnapshots.add(guildId);
    setImmediate(() => {
      this.#pendingSnapshots.delete(guildId);
      const entry = this.#sessions.get(guildId);
      if (entry?.session !== session || session.ended || !session.channelId) return;
      this.#options.onSnapshot?.(guildId, {
        channelId: session.channelId,
        announceChannelId: entry.announce && 'id' in entry.announce ? entry.announce.id : null,
        queue: session.unheard(),
      });
    });
  }

  #onEnd(guild: Guild, session: GuildSession, reason: SessionEnd): void {
    this.#options.observer?.ended(session, reason);
    const entry = this.#sessions.get(guild.id);
    if (entry?.session !== session) return;
    this.#sessions.delete(guild.id);
    if (reason !== 'shutdown') this.#options.onSnapshot?.(guild.id, null);
    // The channel it ended in: a move may have taken Herald elsewhere since the join.
    const channelName = guild.channels.cache.get(session.channelId ?? '')?.name ?? 'the voice channel';
    const announce = (said: SessionEnd): void => {
      const message = END_MESSAGES[said]?.(channelName);
      if (!message || !entry.announce) return;
      entry.announce.send({ content: message, allowedMentions: { parse: [] } }).catch((error: unknown) => {
        this.#options.logger.warn('could not announce the end of a voice session', {
          guild: guild.id,
          err: error,
        });
      });
    };
    if (reason !== 'alone') {
      announce(reason);
      return;
    }
    // "Nobody is listening" waits a moment: a CHANNEL_DELETE that follows the members' leaving makes it "deleted".
    const notice = { channelId: session.channelId, reason: reason as SessionEnd };
    this.#aloneNotices.set(guild.id, notice);
    setTimeout(() => {
      if (this.#aloneNotices.get(guild.id) === notice) this.#aloneNotices.delete(guild.id);
      announce(notice.reason);
    }, ALONE_GRACE_MS).unref();
  }
}
