import { MessageFlags } from 'discord.js';
import { UserFacingError } from '../discord/member-facing.ts';
import type { Logger } from '../log.ts';
import type { MemberStore } from '../members/index.ts';
import { resolveSpeaker } from '../members/speakers.ts';
import type { SettingsStore } from '../storage/index.ts';
import { type MessageToSpeak, needsAuthorPrefix } from '../text/normalise.ts';
import type { TtsClient } from '../tts/index.ts';
import type { EnqueueOutcome, SpeechRequest } from '../voice/session.ts';
import { decide, type MessageFacts } from './filter.ts';
import type { AutoReadStore } from './settings.ts';
import { spokenTextOf, toSpeakOf } from './spoken.ts';

/**
 * The parts of a discord.js `Message` the reader uses. A real `Message` fits; tests pass small literals.
 */
export interface IncomingMessage {
  readonly id: string;
  readonly guildId: string | null;
  readonly channelId: string;
  readonly content: string;
  readonly system: boolean;
  readonly webhookId: string | null;
  readonly author: { readonly id: string; readonly bot: boolean; readonly displayName: string };
  /** The author as a server member (nickname, voice state); null for webhooks. */
  readonly member: {
    readonly displayName: string;
    readonly voice: { readonly channelId: string | null };
  } | null;
  readonly flags: { has(flag: number): boolean };
  readonly attachments: {
    values(): Iterable<{ readonly name: string; readonly contentType: string | null }>;
  };
  readonly stickers: { values(): Iterable<{ readonly name: string }> };
  /** Users the message mentions; their names are known even when they are not cached as members. */
  readonly mentions: { readonly users: { get(id: string): { readonly displayName: string } | undefined } };
  /** Herald's own user, to never read its own messages. */
  readonly client: { readonly user: { readonly id: string } | null };
  readonly guild: {
    readonly members: { readonly cache: { get(id: string): { readonly displayName: string } | undefined } };
    readonly roles: { readonly cache: { get(id: string): { readonly name: string } | undefined } };
    readonly channels: { readonly cache: { get(id: string): { readonly name: string } | undefined } };
  } | null;
}

/** A deleted message: only its id and server are needed (a partial `Message` fits). */
export interface DeletedMessage {
  readonly id: string;
  readonly guildId: string | null;
}

/** The voice session the reader speaks on; a `GuildSession` fits. */
export interface LiveSession {
  readonly channelId: string | null;
  enqueue(request: SpeechRequest): EnqueueOutcome;
  withdraw(key: string): boolean;
  /** Puts an edited request in place of the waiting one with its key; false when none waits or it is paid for. */
  replace(request: SpeechRequest): boolean;
}

/** Options of {@link createAutoReader}. */
export interface AutoReaderOptions {
  /** Auto-read settings, bound channels and opt-outs. */
  readonly store: AutoReadStore;
  /** Where Herald is in voice; a `VoiceManager` fits. */
  readonly voice: { get(guildId: string): LiveSession | undefined };
  /**
   * Auto-join: brings Herald into `voiceChannelId` (announcing in `textChannelId`) and returns the session, or
   * undefined when it cannot join. Without it, auto-read never joins.
   */
  readonly join?: (guildId: string, voiceChannelId: string, textChannelId: string) => LiveSession | undefined;
  /** The server's dictionary, block list and spoken names; without it, none apply. */
  readonly members?: Pick<MemberStore, 'dictionary' | 'blocked' | 'spokenName'>;
  /** The member's and server's chosen voices. */
  readonly settings: Pick<SettingsStore, 'guild' | 'memberSpeaker'>;
  /** The speaker list (cached by the client). */
  readonly tts: Pick<TtsClient, 'speakers'>;
  /** `TTS_DEFAULT_SPEAKER`: an id or name. */
  readonly defaultSpeaker: string | undefined;
  readonly logger: Logger;
  /** Clock in milliseconds, for the "<name> said" window. `Date.now` by default. */
  readonly now?: () => number;
  /**
   * Posts a notice in a channel when a message could not be spoken (out of budget, a service failure), so
   * auto-read never falls silent without saying why; at most one notice per server every
   * {@link FAILURE_NOTICE_INTERVAL_MS}. Without it, failures are only logged.
   */
  readonly notify?: (channelId: string, error: unknown) => void;
}

/** Queued messages whose author-name choice is remembered for an edit. */
const REMEMBERED_MESSAGES = 2_000;

/** Quiet time between two failure notices in one server, so a run of failures is one message, not a flood. */
export const FAILURE_NOTICE_INTERVAL_MS = 5 * 60_000;

/** Reads new messages aloud while Herald is in voice; attach its handlers to the client's message events. */
export interface AutoReader {
  /** Handles MessageCreate: decides, normalises and queues the message. Never rejects; failures are logged. */
  onMessageCreate(message: IncomingMessage): Promise<void>;
  /** Handles MessageDelete: a message not yet spoken is dropped from the queue (or never queued). */
  onMessageDelete(message: DeletedMessage): void;
  /**
   * Handles MessageUpdate: a queued message edited before its synthesis began is read as edited (in its place in
   * line), or withdrawn when the edit makes it one not to read; once paid for, it is said as it was. Never rejects.
   */
  onMessageUpdate(message: IncomingMessage): Promise<void>;
}

/** Makes the auto-reader. Messages of one server are queued in the order they arrived, whatever each one awaits. */
export function createAutoReader(options: AutoReaderOptions): AutoReader {
  const { store, voice, logger } = options;
  const now = options.now ?? Date.now;
  // The author last read per server: one server has one voice queue, so "<name> said" follows what listeners
  // heard last, whichever bound channel it came from.
  const lastRead = new Map<string, { readonly authorId: string; readonly at: number }>();
  // Each server's messages are handled one after another, so a slow lookup cannot let a later message overtake.
  const chains = new Map<string, Promise<void>>();
  // Messages being handled, so a deletion that arrives before the message is queued still wins.
  const inFlight = new Map<string, { deleted: boolean }>();
  const lastNotice = new Map<string, number>();
  const announced = new Map<string, boolean>();

  function onFailure(guildId: string, channelId: string, error: unknown, log: Logger): void {
    log.warn('auto-read could not speak a message', { err: error });
    const at = now();
    if (
      !options.notify ||
      at - (lastNotice.get(guildId) ?? Number.NEGATIVE_INFINITY) < FAILURE_NOTICE_INTERVAL_MS
    ) {
      return;
    }
    lastNotice.set(guildId, at);
    options.notify(channelId, error);
  }

  async function handle(arrived: Arrived, ticket: { deleted: boolean }, edit: boolean): Promise<void> {
    const { guildId, facts, message } = arrived;
    const members = options.members;
    const [settings, optedOut, blocked] = await Promise.all([
      store.settings(guildId),
      store.optedOut(guildId, facts.authorId),
      members?.blocked(guildId, facts.authorId) ?? false,
    ]);
    let session = voice.get(guildId);
    // Auto-join: decided as if Herald were already in the author's voice channel (never for an edit).
    const joinTo =
      session === undefined && settings.autoJoin && options.join && !edit ? facts.authorVoiceChannelId : null;
    const decision = decide(facts, settings, {
      heraldVoiceChannelId: session?.channelId ?? joinTo,
      optedOut,
      blocked,
    });
    const log = logger.child({ guild: guildId, channel: facts.channelId, message: arrived.id });
    // An edit that makes a waiting message one not to read takes it out of the queue, as a deletion does.
    const ignore = (reason: string): void => {
      const withdrawn = edit && voice.get(guildId)?.withdraw(arrived.id) === true;
      log.debug(edit ? 'auto-read withdrew an edited message' : 'auto-read ignored a message', {
        reason,
        ...(edit ? { withdrawn } : {}),
      });
    };
    if (decision.kind === 'ignore') {
      ignore(decision.reason);
      return;
    }

    const authorId = facts.authorId;
    const [spokenName, dictionary] = await Promise.all([
      members?.spokenName(guildId, authorId) ?? null,
      members?.dictionary(guildId) ?? [],
    ]);
    const name = spokenName ?? arrived.authorName;
    const at = now();
    // An edit keeps what its first reading decided about the author's name.
    const announce = edit
      ? announced.get(arrived.id) === true
      : settings.announceAuthor &&
        needsAuthorPrefix(lastRead.get(guildId), authorId, at, settings.authorWindowSeconds * 1000);
    const text = spokenTextOf(message, arrived.toSpeak, {
      settings,
      dictionary,
      authorPrefix: announce ? name : undefined,
    });
    if (text === '') {
      ignore('empty');
      return;
    }

    const choice = await resolveSpeaker(options, guildId, authorId);
    const speaker = choice.kind === 'chosen' ? choice.speaker : undefined;
    if (!speaker) {
      log.warn('auto-read has no voice to speak with: the speech service lists none');
      return;
    }
    if (session === undefined && joinTo !== null && !ticket.deleted) {
      session = options.join?.(guildId, joinTo, facts.channelId);
      if (!session) {
        log.debug('auto-read could not auto-join the author’s voice channel');
        return;
      }
      log.info('auto-joined the author’s voice channel', { voiceChannel: joinTo });
    }
    // The lookups above took time: the message may have been deleted, or Herald may have left or moved.
    const live = voice.get(guildId);
    if (ticket.deleted || !live || live.channelId !== session?.channelId) {
      log.debug('auto-read dropped a message before queueing', { deleted: ticket.deleted });
      return;
    }
    const request: SpeechRequest = {
      text,
      speaker,
      requestedBy: { id: authorId, name },
      key: arrived.id,
      onFailure: (error) => onFailure(guildId, facts.channelId, error, log),
    };
    if (edit) {
      const replaced = live.replace(request);
      log.debug(
        replaced ? 'auto-read will read the edited text' : 'auto-read kept a message as it was paid for',
        {
          replaced,
        },
      );
      return;
    }
    const queued = live.enqueue(request);
    if (queued.kind === 'queue-full') {
      const whose = queued.scope === 'member' ? 'this member has' : 'this server has';
      onFailure(
        guildId,
        facts.channelId,
        new UserFacingError(`the speech queue is full (${whose} ${queued.limit} messages waiting).`),
        log,
      );
      return;
    }
    lastRead.set(guildId, { authorId, at });
    remember(arrived.id, announce);
  }

  /** Whether each recently queued message was announced with its author's name, so an edit says the same. */
  function remember(id: string, announce: boolean): void {
    announced.set(id, announce);
    // Bounded: a message edited after this many others were queued is read without its author's name.
    if (announced.size > REMEMBERED_MESSAGES) announced.delete(announced.keys().next().value ?? '');
  }

  return {
    onMessageCreate(message) {
      const guildId = message.guildId;
      // Most messages arrive while Herald is not in voice in their server: skip them without touching storage,
      // unless auto-join could bring Herald to the author.
      if (
        guildId === null ||
        (voice.get(guildId) === undefined && !(options.join && message.member?.voice.channelId))
      ) {
        return Promise.resolve();
      }
      const ticket = { deleted: false };
      inFlight.set(message.id, ticket);
      // Read at arrival: discord.js updates cached users, members and voice states in place as later events come.
      const arrived = arrivedOf(message, guildId);
      const run: Promise<void> = (chains.get(guildId) ?? Promise.resolve())
        .then(() => handle(arrived, ticket, false))
        .catch((error: unknown) => {
          logger.warn('auto-read failed on a message', {
            guild: guildId,
            channel: message.channelId,
            message: message.id,
            err: error,
          });
        })
        .finally(() => {
          inFlight.delete(message.id);
          if (chains.get(guildId) === run) chains.delete(guildId);
        });
      chains.set(guildId, run);
      return run;
    },

    onMessageUpdate(message) {
      const guildId = message.guildId;
      // Only a message waiting in a live session can change what is said.
      if (guildId === null || voice.get(guildId) === undefined) return Promise.resolve();
      const ticket = inFlight.get(message.id) ?? { deleted: false };
      const arrived = arrivedOf(message, guildId);
      // In the server's line, after the message's own handling, so the edit finds it queued.
      const run: Promise<void> = (chains.get(guildId) ?? Promise.resolve())
        .then(() => handle(arrived, ticket, true))
        .catch((error: unknown) => {
          logger.warn('auto-read failed on an edited message', {
            guild: guildId,
            message: message.id,
            err: error,
          });
        })
        .finally(() => {
          if (chains.get(guildId) === run) chains.delete(guildId);
        });
      chains.set(guildId, run);
      return run;
    },

    onMessageDelete(message) {
      const ticket = inFlight.get(message.id);
      if (ticket) ticket.deleted = true;
      if (message.guildId === null) return;
      if (voice.get(message.guildId)?.withdraw(message.id)) {
        logger.debug('auto-read withdrew a deleted message', { guild: message.guildId, message: message.id });
      }
    },
  };
}

/** A message as it was when it arrived, plus the live object for name lookups. */
interface Arrived {
  readonly id: string;
  readonly guildId: string;
  readonly facts: MessageFacts;
  readonly authorName: string;
  readonly toSpeak: MessageToSpeak;
  readonly message: IncomingMessage;
}

function arrivedOf(message: IncomingMessage, guildId: string): Arrived {
  const toSpeak = toSpeakOf(message);
  const facts: MessageFacts = {
    channelId: message.channelId,
    authorId: message.author.id,
    self: message.author.id === message.client.user?.id,
    bot: message.author.bot,
    webhook: message.webhookId !== null,
    system: message.system,
    silent: message.flags.has(MessageFlags.SuppressNotifications),
    content: message.content,
    extras: toSpeak.attachments.length + toSpeak.stickers.length,
    authorVoiceChannelId: message.member?.voice.channelId ?? null,
  };
  return {
    id: message.id,
    guildId,
    facts,
    authorName: message.member?.displayName ?? message.author.displayName,
    toSpeak,
    message,
  };
}
