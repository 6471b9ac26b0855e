import { MessageFlags } from 'discord.js';
import { UserFacingError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { resolveSpeaker } from '../speakers.ts';
import type { SettingsStore } from '../storage/index.ts';
import {
  DEFAULT_REPEAT_CAP,
  type MessageToSpeak,
  needsAuthorPrefix,
  normaliseMessage,
} from '../text/normalise.ts';
import { MAX_TEXT_CHARACTERS, type TtsClient } from '../tts/index.ts';
import type { EnqueueOutcome, SpeechRequest } from '../voice/session.ts';
import { decide, type MessageFacts } from './filter.ts';
import type { AutoReadStore } from './settings.ts';

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
}

/** Options of {@link createAutoReader}. */
export interface AutoReaderOptions {
  /** Auto-read settings, bound channels and opt-outs. */
  readonly store: AutoReadStore;
  /** Where Herald is in voice; a `VoiceManager` fits. Auto-read never joins. */
  readonly voice: { get(guildId: string): LiveSession | undefined };
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

/** Quiet time between two failure notices in one server, so a run of failures is one message, not a flood. */
export const FAILURE_NOTICE_INTERVAL_MS = 5 * 60_000;

/** Reads new messages aloud while Herald is in voice; attach its handlers to the client's message events. */
export interface AutoReader {
  /** Handles MessageCreate: decides, normalises and queues the message. Never rejects; failures are logged. */
  onMessageCreate(message: IncomingMessage): Promise<void>;
  /** Handles MessageDelete: a message not yet spoken is dropped from the queue (or never queued). */
  onMessageDelete(message: DeletedMessage): void;
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

  async function handle(arrived: Arrived, ticket: { deleted: boolean }): Promise<void> {
    const { guildId, facts, message } = arrived;
    const [settings, optedOut] = await Promise.all([
      store.settings(guildId),
      store.optedOut(guildId, facts.authorId),
    ]);
    const session = voice.get(guildId);
    const decision = decide(facts, settings, { heraldVoiceChannelId: session?.channelId ?? null, optedOut });
    const log = logger.child({ guild: guildId, channel: facts.channelId, message: arrived.id });
    if (decision.kind === 'ignore') {
      log.debug('auto-read ignored a message', { reason: decision.reason });
      return;
    }

    const authorId = facts.authorId;
    const name = arrived.authorName;
    const at = now();
    const announce =
      settings.announceAuthor &&
      needsAuthorPrefix(lastRead.get(guildId), authorId, at, settings.authorWindowSeconds * 1000);
    const text = normaliseMessage(arrived.toSpeak, {
      // Names are looked up now rather than at arrival: the caches only ever get fresher.
      userName: (id) =>
        message.guild?.members.cache.get(id)?.displayName ?? message.mentions.users.get(id)?.displayName,
      roleName: (id) => message.guild?.roles.cache.get(id)?.name,
      channelName: (id) => message.guild?.channels.cache.get(id)?.name,
      linkDomains: settings.linkDomains,
      emoji: settings.emoji,
      maxChars: Math.min(settings.maxChars, MAX_TEXT_CHARACTERS),
      repeatCap: DEFAULT_REPEAT_CAP,
      ...(announce ? { authorPrefix: name } : {}),
    });
    if (text === '') {
      log.debug('auto-read ignored a message', { reason: 'empty' });
      return;
    }

    const choice = await resolveSpeaker(options, guildId, authorId);
    const speaker = choice.kind === 'chosen' ? choice.speaker : undefined;
    if (!speaker) {
      log.warn('auto-read has no voice to speak with: the speech service lists none');
      return;
    }
    // The lookups above took time: the message may have been deleted, or Herald may have left or moved.
    const live = voice.get(guildId);
    if (ticket.deleted || !live || live.channelId !== session?.channelId) {
      log.debug('auto-read dropped a message before queueing', { deleted: ticket.deleted });
      return;
    }
    const queued = live.enqueue({
      text,
      speaker,
      requestedBy: { id: authorId, name },
      key: arrived.id,
      onFailure: (error) => onFailure(guildId, facts.channelId, error, log),
    });
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
  }

  return {
    onMessageCreate(message) {
      const guildId = message.guildId;
      // Most messages arrive while Herald is not in voice in their server: skip them without touching storage.
      if (guildId === null || voice.get(guildId) === undefined) return Promise.resolve();
      const ticket = { deleted: false };
      inFlight.set(message.id, ticket);
      // Read at arrival: discord.js updates cached users, members and voice states in place as later events come.
      const arrived = arrivedOf(message, guildId);
      const run: Promise<void> = (chains.get(guildId) ?? Promise.resolve())
        .then(() => handle(arrived, ticket))
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
  const attachments = [...message.attachments.values()].map(({ name, contentType }) => ({
    name,
    contentType,
  }));
  const stickers = [...message.stickers.values()].map(({ name }) => ({ name }));
  const facts: MessageFacts = {
    channelId: message.channelId,
    authorId: message.author.id,
    self: message.author.id === message.client.user?.id,
    bot: message.author.bot,
    webhook: message.webhookId !== null,
    system: message.system,
    silent: message.flags.has(MessageFlags.SuppressNotifications),
    content: message.content,
    extras: attachments.length + stickers.length,
    authorVoiceChannelId: message.member?.voice.channelId ?? null,
  };
  return {
    id: message.id,
    guildId,
    facts,
    authorName: message.member?.displayName ?? message.author.displayName,
    toSpeak: { content: message.content, attachments, stickers },
    message,
  };
}
