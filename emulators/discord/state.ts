/** The emulator's shared state (guilds, messages, interactions, waits) and the lookups every part uses. */
import type { StoredFile } from './attachments.ts';
import type { CaptureSink } from './capture.ts';
import { createCapture } from './capture.ts';
import type { DaveMedia } from './dave-media.ts';
import type { Gateway } from './gateway.ts';
import type { BotUser, ChannelState, GuildState, MemberState } from './model.ts';
import type { RestCall } from './rest.ts';
import type { Channel, Guild, Json, Member, Reply } from './types.ts';
import type { VoiceServer } from './voice.ts';

// Interaction callback types (Discord API).
export const CALLBACK = { reply: 4, defer: 5, deferUpdate: 6, update: 7, autocomplete: 8, modal: 9 } as const;
export const EPHEMERAL = 64;
export const INTERACTION_TOKEN_LIFETIME_MS = 15 * 60_000;

export interface MessageRecord {
  readonly id: string;
  readonly channelId: string;
  readonly guildId: string;
  /** Undefined: the bot. */
  readonly author: MemberState | undefined;
  content: string;
  embeds: Json[];
  components: Json[];
  allowedMentions: unknown;
  flags: number;
  replyTo: string | undefined;
  files: StoredFile[];
  readonly interactionId: string | undefined;
  readonly timestamp: string;
  editedTimestamp: string | null;
  deleted: boolean;
}

export interface InteractionRecord {
  readonly id: string;
  readonly token: string;
  readonly type: 2 | 3 | 4;
  readonly createdAt: number;
  readonly guild: GuildState;
  readonly channel: ChannelState;
  readonly name: string;
  /** For button presses: the message the button was on. */
  readonly source: MessageRecord | undefined;
  /** The app's permissions in the channel (`app_permissions`), which its messages are held to. */
  readonly appPermissions: bigint;
  acknowledged: boolean;
  deferred: boolean;
  original: MessageRecord | undefined;
  final: Reply | undefined;
  readonly edits: Reply[];
  readonly followUps: Reply[];
  choices: { name: string; value: string | number }[] | undefined;
  expired: boolean;
}

export type Listener = () => void;

/** Everything the emulator's parts share; `gateway` and `voice` are the two servers the bot talks to. */
export interface Context {
  readonly botUser: BotUser & { readonly bot: true };
  readonly applicationId: string;
  readonly interactionResponseMs: number;
  /** The application's owner as `GET /applications/@me` reports it; none when undefined. */
  readonly applicationOwnerId: string | undefined;
  /** The application's flags, as READY and `GET /applications/@me` report them. */
  readonly applicationFlags: number;
  readonly guilds: Map<string, GuildState>;
  readonly handles: Map<string, Guild>;
  readonly captures: Map<string, CaptureSink>;
  readonly messages: Map<string, MessageRecord>;
  readonly interactions: Map<string, InteractionRecord>;
  /** Message ids the bot posted through REST, per channel. */
  readonly posted: Map<string, string[]>;
  readonly voiceSessions: Map<string, string>;
  readonly rest: RestCall[];
  readonly commands: { global: Json[]; guild: Map<string, Json[]> };
  readonly listeners: Set<Listener>;
  readonly timers: Set<NodeJS.Timeout>;
  readonly resumedListeners: Set<() => void>;
  readonly voiceRequests: { guildId: string; channelId: string | null; granted: boolean; at: number }[];
  readonly flags: { refuseVoiceJoin: boolean };
  readonly gateway: Gateway;
  readonly voice: VoiceServer;
  readonly dave: DaveMedia;
  notify(): void;
  /** Resolves when `check` returns a value; re-checked on every emulator event. @throws on timeout. */
  waitFor<T>(what: string, timeoutMs: number, check: () => T | undefined): Promise<T>;
  captureOf(guildId: string): CaptureSink;
  guildOf(guildId: string): GuildState;
  memberOf(member: Member): MemberState;
  channelOf(channel: Channel): ChannelState;
  botMember(guild: GuildState): MemberState;
  findChannel(channelId: string): { guild: GuildState; channel: ChannelState } | undefined;
}

/** The part of {@link Context} that exists before the servers are started. */
export type State = Omit<Context, 'gateway' | 'voice' | 'dave'>;

/** Creates the emulator's empty state for `botUser`. */
export function createState(o: {
  botUser: BotUser & { readonly bot: true };
  applicationId: string;
  interactionResponseMs: number;
  applicationOwnerId?: string | undefined;
  applicationFlags: number;
}): State {
  const { botUser } = o;
  const guilds = new Map<string, GuildState>();
  const handles = new Map<string, Guild>();
  const captures = new Map<string, CaptureSink>();
  const messages = new Map<string, MessageRecord>();
  const interactions = new Map<string, InteractionRecord>();
  const posted = new Map<string, string[]>();
  const voiceSessions = new Map<string, string>();
  const rest: RestCall[] = [];
  const commands = { global: [] as Json[], guild: new Map<string, Json[]>() };
  const listeners = new Set<Listener>();
  const timers = new Set<NodeJS.Timeout>();
  const resumedListeners = new Set<() => void>();
  const voiceRequests: { guildId: string; channelId: string | null; granted: boolean; at: number }[] = [];
  const flags = { refuseVoiceJoin: false };

  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };

  /** Resolves when `check` returns a value; re-checked on every emulator event. */
  const waitFor = <T>(what: string, timeoutMs: number, check: () => T | undefined): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const listener = (): void => {
        let value: T | undefined;
        try {
          value = check();
        } catch (error) {
          finish();
          reject(error);
          return;
        }
        if (value === undefined) return;
        finish();
        resolve(value);
      };
      const finish = (): void => {
        clearTimeout(timer);
        timers.delete(timer);
        listeners.delete(listener);
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`discord emulator: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      timers.add(timer);
      listeners.add(listener);
      listener();
    });

  const captureOf = (guildId: string): CaptureSink => {
    let sink = captures.get(guildId);
    if (!sink) {
      sink = createCapture();
      captures.set(guildId, sink);
    }
    return sink;
  };

  const guildOf = (guildId: string): GuildState => {
    const guild = guilds.get(guildId);
    if (!guild) throw new Error(`discord emulator: unknown guild ${guildId}`);
    return guild;
  };
  const memberOf = (member: Member): MemberState => {
    const state = guildOf(member.guildId).members.get(member.id);
    if (!state) throw new Error(`discord emulator: ${member.name} is not in guild ${member.guildId}`);
    return state;
  };
  const channelOf = (channel: Channel): ChannelState => {
    const state = guildOf(channel.guildId).channels.get(channel.id);
    if (!state) throw new Error(`discord emulator: channel ${channel.name} does not exist (any more)`);
    return state;
  };
  const botMember = (guild: GuildState): MemberState => {
    const bot = guild.members.get(botUser.id);
    if (!bot) throw new Error(`discord emulator: the bot is not in guild ${guild.name}`);
    return bot;
  };
  const findChannel = (channelId: string): { guild: GuildState; channel: ChannelState } | undefined => {
    for (const guild of guilds.values()) {
      const channel = guild.channels.get(channelId);
      if (channel) return { guild, channel };
    }
    return undefined;
  };

  return {
    botUser,
    applicationId: o.applicationId,
    interactionResponseMs: o.interactionResponseMs,
    applicationOwnerId: o.applicationOwnerId,
    applicationFlags: o.applicationFlags,
    guilds,
    handles,
    captures,
    messages,
    interactions,
    posted,
    voiceSessions,
    rest,
    commands,
    listeners,
    timers,
    resumedListeners,
    voiceRequests,
    flags,
    notify,
    waitFor,
    captureOf,
    guildOf,
    memberOf,
    channelOf,
    botMember,
    findChannel,
  };
}
