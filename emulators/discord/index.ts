/**
 * A local Discord for end-to-end tests: REST, gateway v10, voice gateway v8 over TLS and UDP media, on loopback,
 * good enough for the UNMODIFIED discord.js and @discordjs/voice. Tests drive it like users do (see
 * `startDiscordEmulator`). Facts it rests on: /work/shared/discord-protocol.md.
 *
 * Simplifications, on purpose:
 * - The bot's guild-level permissions are exactly what `setBotPermissions` (or the default) says: @everyone's
 *   are not added for the bot, so a test can take a permission away guild-wide.
 * - One shard; one gateway session at a time; no rate limits; no DAVE (the emulator declines it, see voice.ts).
 * - A slash command that was never registered is still delivered (with a made-up id), so tests need not register.
 */
import { PermissionFlagsBits } from 'discord.js';
import { type CaptureSink, createCapture, type VoiceCapture } from './capture.ts';
import { createGateway } from './gateway.ts';
import {
  ALL_PERMISSIONS,
  type ChannelState,
  channelPayload,
  channelPermissions,
  DEFAULT_BOT_PERMISSIONS,
  DEFAULT_EVERYONE_PERMISSIONS,
  type GuildState,
  guildCreatePayload,
  INTENTS,
  type MemberState,
  memberPayload,
  randomToken,
  snowflake,
  userPayload,
  voiceStatePayload,
} from './model.ts';
import { apiError, createRestServer, type RestCall, type RestResponse, type Route } from './rest.ts';
import { trustedTestCertificate } from './tls.ts';
import { createVoiceServer } from './voice.ts';

export type { Heard, VoiceCapture } from './capture.ts';
export { hear, intervalStats } from './capture.ts';
export type { RestCall } from './rest.ts';
export type { CapturedFrame } from './voice.ts';

/** Arbitrary JSON the bot sent (embeds, components, commands); tests index into it freely. */
// biome-ignore lint/suspicious/noExplicitAny: JSON the bot sent, read by tests without ceremony.
export type Json = any;

/** A member of an emulated guild, as tests refer to it. */
export interface Member {
  readonly id: string;
  readonly name: string;
  readonly guildId: string;
}

/** A channel of an emulated guild. */
export interface Channel {
  readonly id: string;
  readonly name: string;
  readonly type: 'text' | 'voice';
  readonly guildId: string;
}

/** A message as the emulator holds it (a snapshot: later edits do not change it). */
export interface SentMessage {
  readonly id: string;
  readonly channelId: string;
  readonly content: string;
  readonly embeds: Json[];
  readonly components: Json[];
  readonly allowedMentions: unknown;
  /** Message flags as sent (64 ephemeral, 4096 silent). */
  readonly flags: number;
  /** The message this one replies to (`message_reference`), if any. */
  readonly replyTo: string | undefined;
  /** Attachments uploaded with it (multipart). */
  readonly files: readonly { filename: string; size: number }[];
}

/** What the bot answered to an interaction, once it had a final answer (reply, update, or defer + edit). */
export interface Reply {
  readonly content: string;
  readonly embeds: Json[];
  readonly components: Json[];
  readonly ephemeral: boolean;
  /** True when the answer came as a deferral followed by an edit. */
  readonly deferred: boolean;
  /** `allowed_mentions` as sent; Herald must send `{ parse: [] }`. */
  readonly allowedMentions: unknown;
  /** The message that carries the answer, to press buttons on. */
  readonly message: SentMessage;
  /** Later edits of the original response, oldest first (live: grows as the bot edits). */
  readonly edits: readonly Reply[];
  /** Follow-up messages sent with the interaction token, oldest first. */
  followUps(): Reply[];
  /** Resolves with the next edit of the original response. @throws on timeout (default 10 s). */
  untilEdited(o?: { timeoutMs?: number }): Promise<Reply>;
  /** Resolves with the next follow-up. @throws on timeout (default 10 s). */
  untilFollowUp(o?: { timeoutMs?: number }): Promise<Reply>;
  /** True once the bot deleted its original response. */
  deleted(): boolean;
}

/** An emulated guild: build it, then act in it as its members. */
export interface Guild {
  readonly id: string;
  readonly name: string;
  addTextChannel(name: string): Channel;
  /** A voice channel; `deny.botPermissions` becomes a deny overwrite for the bot on it. */
  addVoiceChannel(name: string, o?: { userLimit?: number; deny?: { botPermissions?: bigint } }): Channel;
  /** A member; `permissions` (PermissionFlagsBits) become the member's own role; default @everyone's only. */
  /** A member; `id` is a fixed user id (e.g. the application's owner), random by default. */
  addMember(o: { name: string; permissions?: bigint; bot?: boolean; nick?: string; id?: string }): Member;
  /** Guild-wide: the bot's exact base permissions. With a channel: an overwrite allowing exactly those there. */
  setBotPermissions(permissions: bigint, channel?: Channel): void;
  /** The member sits down in a voice channel (VOICE_STATE_UPDATE). @throws if the channel is full for them. */
  joinVoice(member: Member, channel: Channel): void;
  leaveVoice(member: Member): void;
  /** An admin drags the bot to `channel`, or disconnects it (null): voice state, new server, old socket 4014. */
  moveBot(channel: Channel | null): void;
  /** CHANNEL_DELETE; everyone in it leaves; the bot's voice socket closes 4014 if it was there. */
  deleteChannel(channel: Channel): void;
  /** The bot is kicked: GUILD_DELETE, voice socket closed 4014. */
  removeBot(): void;
  /** The voice channel the bot sits in, as far as the emulator knows. */
  botVoiceChannelId(): string | null;
  /** Who sits in `channel` (member ids, the bot included). */
  voiceMembers(channel: Channel): string[];
  /** The bot as a member of this guild. */
  readonly bot: Member;
}

/** Options of {@link startDiscordEmulator}. */
export interface DiscordEmulatorOptions {
  applicationId?: string;
  /** The bot token the emulator accepts; default random and Discord-shaped. */
  token?: string;
  botName?: string;
  /** Gateway HELLO heartbeat interval; default 41250 ms as Discord. Shorten to test zombie detection. */
  gatewayHeartbeatMs?: number;
  /** Voice HELLO heartbeat interval; default 13750 ms as Discord. */
  voiceHeartbeatMs?: number;
  /** How long an interaction waits for its initial response before it is unknown; default 3000 ms as Discord. */
  interactionResponseMs?: number;
  /** The application's owner (`GET /applications/@me` → `owner`): a user id; default none reported. */
  applicationOwnerId?: string;
}

/** Deliberate misbehaviour of the emulated Discord. */
export interface Faults {
  /** Closes the guild's voice websocket with `code` (4014 kicked, 4006 session invalid, 4015 crashed, 4017 DAVE). */
  closeVoice(guild: Guild, code: number): void;
  dropVoiceHeartbeats(on: boolean): void;
  dropGatewayHeartbeats(on: boolean): void;
  /** Gateway op 7: the client reconnects and resumes. */
  reconnectGateway(): void;
  /** Gateway op 9. */
  invalidateSession(resumable: boolean): void;
  /** While on, a voice join gets its VOICE_STATE_UPDATE but never a VOICE_SERVER_UPDATE. */
  refuseVoiceJoin(on: boolean): void;
  /** Holds the voice READY back by `ms` on every voice handshake (0 turns it off). */
  delayVoiceHandshake(ms: number): void;
}

/** The running emulator and its driver. */
export interface DiscordEmulator {
  /** `http://127.0.0.1:P/api`: pass as discord.js `rest: { api: restUrl }`. */
  readonly restUrl: string;
  /** `ws://127.0.0.1:P/gateway`, as `GET /gateway/bot` hands it out. */
  readonly gatewayUrl: string;
  readonly token: string;
  readonly applicationId: string;
  readonly botUserId: string;
  /** Every REST call, in order. */
  readonly rest: readonly RestCall[];
  /** Commands as the bot registered them (global, and per guild id). */
  readonly commands: { global: Json[]; guild: Map<string, Json[]> };
  /** What the bot identified with, one entry per IDENTIFY. */
  readonly identifies: readonly { intents: number; at: number }[];
  /** Every voice state request (gateway op 4) the bot sent, in order, and whether the emulator granted it. */
  readonly voiceRequests: readonly {
    guildId: string;
    channelId: string | null;
    granted: boolean;
    at: number;
  }[];
  /** Gateway heartbeats answered and dropped. */
  readonly gatewayHeartbeats: { readonly acked: number; readonly dropped: number };
  /** Creates a guild; if the bot is connected it receives GUILD_CREATE (it was just added). */
  createGuild(o: { name: string }): Guild;
  /** Resolves once a bot has identified and was sent READY + every GUILD_CREATE. */
  untilReady(): Promise<void>;
  /** Resolves on the next RESUMED or IDENTIFY after this call. @throws on timeout (default 20 s). */
  untilSessionRestored(o?: { timeoutMs?: number }): Promise<'resumed' | 'identified'>;
  /** `member` runs `/command` in `channel` (default: the guild's first text channel); resolves to the answer. */
  slash(
    member: Member,
    command: string,
    options?: Record<string, string | number | boolean | Channel | Member>,
    o?: { channel?: Channel; subcommand?: string; locale?: string; timeoutMs?: number },
  ): Promise<Reply>;
  /** `member` types into the `focused` option; resolves to the choices the bot offered. */
  autocomplete(
    member: Member,
    command: string,
    options: Record<string, string | number>,
    focused: string,
    o?: { channel?: Channel; subcommand?: string },
  ): Promise<{ name: string; value: string | number }[]>;
  /** Presses a button on a message the bot sent. @throws if the message has no such enabled button. */
  press(member: Member, message: SentMessage, customId: string, o?: { timeoutMs?: number }): Promise<Reply>;
  /** `member` posts a message (MESSAGE_CREATE; content blanked unless the bot has MESSAGE_CONTENT or is mentioned). */
  sendMessage(
    member: Member,
    channel: Channel,
    content: string,
    o?: {
      silent?: boolean;
      bot?: boolean;
      webhook?: boolean;
      attachments?: { filename: string; content_type: string }[];
      stickers?: { id: string; name: string }[];
      mentions?: Member[];
    },
  ): SentMessage;
  /** MESSAGE_DELETE for a message. */
  deleteMessage(message: SentMessage): void;
  /** Messages the bot posted in `channel` through REST, in order (latest content). */
  channelMessages(channel: Channel): SentMessage[];
  /** Resolves with the next message the bot posts in `channel` (matching `match`). @throws on timeout (10 s). */
  untilChannelMessage(
    channel: Channel,
    o?: { timeoutMs?: number; match?: (m: SentMessage) => boolean },
  ): Promise<SentMessage>;
  /** What the bot played in `guild`, across reconnects. */
  voice(guild: Guild): VoiceCapture;
  /** Voice packets that failed to decrypt or matched no session. */
  readonly rejectedVoicePackets: number;
  /** Voice handshakes accepted so far: IDENTIFY (a fresh voice session) and RESUME. */
  readonly voiceHandshakes: { readonly identified: number; readonly resumed: number };
  readonly faults: Faults;
  close(): Promise<void>;
}

// Interaction callback types (Discord API).
const CALLBACK = { reply: 4, defer: 5, deferUpdate: 6, update: 7, autocomplete: 8, modal: 9 } as const;
const EPHEMERAL = 64;
const INTERACTION_TOKEN_LIFETIME_MS = 15 * 60_000;

interface MessageRecord {
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
  files: { filename: string; size: number }[];
  readonly interactionId: string | undefined;
  readonly timestamp: string;
  editedTimestamp: string | null;
  deleted: boolean;
}

interface InteractionRecord {
  readonly id: string;
  readonly token: string;
  readonly type: 2 | 3 | 4;
  readonly createdAt: number;
  readonly guild: GuildState;
  readonly channel: ChannelState;
  readonly name: string;
  /** For button presses: the message the button was on. */
  readonly source: MessageRecord | undefined;
  acknowledged: boolean;
  deferred: boolean;
  original: MessageRecord | undefined;
  final: Reply | undefined;
  readonly edits: Reply[];
  readonly followUps: Reply[];
  choices: { name: string; value: string | number }[] | undefined;
  expired: boolean;
}

type Listener = () => void;

/** Starts the emulator on loopback (REST + gateway on one port, voice on a TLS port and a UDP port). */
export async function startDiscordEmulator(o: DiscordEmulatorOptions = {}): Promise<DiscordEmulator> {
  const certificate = await trustedTestCertificate();
  const applicationId = o.applicationId ?? snowflake();
  const botUser = { id: applicationId, name: o.botName ?? 'Herald', bot: true };
  const token =
    o.token ?? `${Buffer.from(botUser.id).toString('base64url')}.${randomToken(4)}.${randomToken(27)}`;
  const interactionResponseMs = o.interactionResponseMs ?? 3000;

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
  let refuseVoiceJoin = false;

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

  const voice = await createVoiceServer({
    cert: certificate.cert,
    key: certificate.key,
    heartbeatIntervalMs: o.voiceHeartbeatMs ?? 13_750,
    events: {
      onFrame: (guildId, frame) => captureOf(guildId).push(frame),
      onSpeaking: (guildId, speaking) => captureOf(guildId).speaking(speaking),
      onConnectedChange: (guildId, connected) => captureOf(guildId).setConnected(connected),
    },
  });

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
  const voiceSessionOf = (userId: string): string => {
    if (userId === botUser.id) return gateway.sessionId() ?? 'none';
    let id = voiceSessions.get(userId);
    if (!id) {
      id = randomToken(16);
      voiceSessions.set(userId, id);
    }
    return id;
  };
  const botConnected = (): boolean => gateway.isReady();

  const gateway = createGateway({
    token,
    heartbeatIntervalMs: o.gatewayHeartbeatMs ?? 41_250,
    url: () => gatewayUrl,
    hooks: {
      readyPayload: () => ({
        user: { ...userPayload(botUser), verified: true, mfa_enabled: false, flags: 0 },
        guilds: [...guilds.values()]
          .filter((g) => g.botPresent)
          .map((g) => ({ id: g.id, unavailable: true })),
        application: { id: applicationId, flags: 0 },
        private_channels: [],
        relationships: [],
        presences: [],
        guild_join_requests: [],
        geo_ordered_rtc_regions: ['local'],
        user_settings: {},
        auth: {},
      }),
      afterReady: () => {
        for (const guild of guilds.values()) {
          if (guild.botPresent) gateway.dispatch('GUILD_CREATE', guildCreatePayload(guild, voiceSessionOf));
        }
      },
      onReady: () => notify(),
      onVoiceStateUpdate: (d) => onBotVoiceState(d),
      onResumed: () => {
        for (const listener of [...resumedListeners]) listener();
        notify();
      },
    },
  });

  const dispatchVoiceState = (guild: GuildState, member: MemberState, channelId: string | null): void => {
    if (channelId) guild.voice.set(member.id, channelId);
    else guild.voice.delete(member.id);
    gateway.dispatch(
      'VOICE_STATE_UPDATE',
      voiceStatePayload(guild, member, channelId, voiceSessionOf(member.id), member.id === botUser.id),
      INTENTS.guildVoiceStates,
    );
  };

  const occupants = (guild: GuildState, channelId: string): string[] =>
    [...guild.voice].filter(([, c]) => c === channelId).map(([userId]) => userId);

  const isFullFor = (guild: GuildState, channel: ChannelState, member: MemberState): boolean => {
    const others = occupants(guild, channel.id).filter((id) => id !== member.id);
    const canMove = (channelPermissions(guild, member, channel) & PermissionFlagsBits.MoveMembers) !== 0n;
    return channel.userLimit > 0 && others.length >= channel.userLimit && !canMove;
  };

  /** The bot's op 4. Discord answers nothing at all to a join it refuses (no permission, channel full). */
  const onBotVoiceState = (d: { guild_id: string; channel_id: string | null }): void => {
    const granted = grantVoiceState(d);
    voiceRequests.push({ guildId: d.guild_id, channelId: d.channel_id, granted, at: Date.now() });
    notify();
  };

  const grantVoiceState = (d: { guild_id: string; channel_id: string | null }): boolean => {
    const guild = guilds.get(d.guild_id);
    if (!guild?.botPresent) return false;
    const bot = botMember(guild);
    if (d.channel_id === null) {
      dispatchVoiceState(guild, bot, null);
      voice.release(guild.id);
      return true;
    }
    const channel = guild.channels.get(d.channel_id);
    if (channel?.type !== 'voice') return false;
    const perms = channelPermissions(guild, bot, channel);
    const needed = PermissionFlagsBits.ViewChannel | PermissionFlagsBits.Connect;
    if ((perms & needed) !== needed || isFullFor(guild, channel, bot)) return false;
    dispatchVoiceState(guild, bot, channel.id);
    if (refuseVoiceJoin) return false;
    // VOICE_STATE_UPDATE first: in the other order the library never leaves `signalling`.
    const voiceToken = voice.allocate(guild.id, bot.id, voiceSessionOf(bot.id));
    gateway.dispatch('VOICE_SERVER_UPDATE', {
      token: voiceToken,
      guild_id: guild.id,
      endpoint: voice.endpoint,
    });
    return true;
  };

  const disconnectBotVoice = (guild: GuildState): void => {
    // 4014: disconnected (kicked, moved out, channel deleted); the library does not rejoin on its own.
    voice.closeSocket(guild.id, 4014, 'Disconnected.');
    voice.release(guild.id);
  };

  const messagePayload = (message: MessageRecord): Record<string, unknown> => {
    const guild = guilds.get(message.guildId);
    const author = message.author;
    return {
      id: message.id,
      channel_id: message.channelId,
      guild_id: message.guildId,
      author: userPayload(author ?? botUser),
      ...(author && guild ? { member: memberPayload(author, false) } : {}),
      content: message.content,
      timestamp: message.timestamp,
      edited_timestamp: message.editedTimestamp,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: message.files.map((f, i) => ({
        id: `${message.id}${i}`,
        filename: f.filename,
        size: f.size,
        url: `https://cdn.invalid/${f.filename}`,
        proxy_url: `https://cdn.invalid/${f.filename}`,
      })),
      embeds: message.embeds,
      components: message.components,
      pinned: false,
      type: message.replyTo ? 19 : 0,
      flags: message.flags,
      ...(message.interactionId ? { webhook_id: applicationId, application_id: applicationId } : {}),
      ...(message.replyTo
        ? {
            message_reference: {
              message_id: message.replyTo,
              channel_id: message.channelId,
              guild_id: message.guildId,
            },
          }
        : {}),
    };
  };

  const snapshot = (message: MessageRecord): SentMessage => ({
    id: message.id,
    channelId: message.channelId,
    content: message.content,
    embeds: message.embeds,
    components: message.components,
    allowedMentions: message.allowedMentions,
    flags: message.flags,
    replyTo: message.replyTo,
    files: [...message.files],
  });

  const newBotMessage = (
    guild: GuildState,
    channelId: string,
    body: Record<string, unknown>,
    interactionId: string | undefined,
  ): MessageRecord => {
    const message: MessageRecord = {
      id: snowflake(),
      channelId,
      guildId: guild.id,
      author: undefined,
      content: '',
      embeds: [],
      components: [],
      allowedMentions: undefined,
      flags: 0,
      replyTo: undefined,
      files: [],
      interactionId,
      timestamp: new Date().toISOString(),
      editedTimestamp: null,
      deleted: false,
    };
    applyBody(message, body);
    messages.set(message.id, message);
    return message;
  };

  const applyBody = (message: MessageRecord, body: Record<string, unknown>): void => {
    if ('content' in body) message.content = typeof body.content === 'string' ? body.content : '';
    if ('embeds' in body) message.embeds = Array.isArray(body.embeds) ? body.embeds : [];
    if ('components' in body) message.components = Array.isArray(body.components) ? body.components : [];
    if ('allowed_mentions' in body) message.allowedMentions = body.allowed_mentions;
    if (typeof body.flags === 'number') message.flags = body.flags;
    const reference = body.message_reference as { message_id?: string } | undefined;
    if (reference?.message_id) message.replyTo = reference.message_id;
    if (Array.isArray(body.files)) {
      message.files = (body.files as { filename: string; size: number }[]).map((f) => ({
        filename: f.filename,
        size: f.size,
      }));
    }
  };

  const makeReply = (record: InteractionRecord, message: MessageRecord, deferred: boolean): Reply => ({
    content: message.content,
    embeds: message.embeds,
    components: message.components,
    ephemeral: (message.flags & EPHEMERAL) !== 0,
    deferred,
    allowedMentions: message.allowedMentions,
    message: snapshot(message),
    edits: record.edits,
    followUps: () => [...record.followUps],
    untilEdited: (w) => {
      const seen = record.edits.length;
      return waitFor('an edit of the reply', w?.timeoutMs ?? 10_000, () => record.edits[seen]);
    },
    untilFollowUp: (w) => {
      const seen = record.followUps.length;
      return waitFor('a follow-up', w?.timeoutMs ?? 10_000, () => record.followUps[seen]);
    },
    deleted: () => record.original?.deleted === true,
  });

  const finalise = (record: InteractionRecord, message: MessageRecord): void => {
    const reply = makeReply(record, message, record.deferred);
    if (record.final) record.edits.push(reply);
    else record.final = reply;
    notify();
  };

  const interactionFor = (token_: string): InteractionRecord | RestResponse => {
    const record = interactions.get(token_);
    if (!record) return apiError(404, 10015, 'Unknown Webhook');
    if (Date.now() - record.createdAt > INTERACTION_TOKEN_LIFETIME_MS) {
      return apiError(401, 50027, 'Invalid Webhook Token');
    }
    return record;
  };

  const onCallback = (call: RestCall, id: string, token_: string): RestResponse => {
    const record = interactions.get(token_);
    if (!record || record.id !== id || record.expired) return apiError(404, 10062, 'Unknown interaction');
    if (record.acknowledged) return apiError(400, 40060, 'Interaction has already been acknowledged.');
    const body = (call.body ?? {}) as { type?: number; data?: Record<string, unknown> };
    const data = body.data ?? {};
    record.acknowledged = true;
    let resource: MessageRecord | undefined;
    switch (body.type) {
      case CALLBACK.reply:
        record.original = newBotMessage(record.guild, record.channel.id, data, record.id);
        resource = record.original;
        finalise(record, record.original);
        break;
      case CALLBACK.defer:
        record.deferred = true;
        // The "thinking…" message exists from now on; the edit fills it in.
        record.original = newBotMessage(
          record.guild,
          record.channel.id,
          { flags: (Number(data.flags) || 0) | 128 },
          record.id,
        );
        resource = record.original;
        notify();
        break;
      case CALLBACK.update:
      case CALLBACK.deferUpdate: {
        if (!record.source) return apiError(400, 50035, 'Invalid Form Body');
        record.original = record.source;
        resource = record.source;
        if (body.type === CALLBACK.update) {
          applyBody(record.source, data);
          record.source.editedTimestamp = new Date().toISOString();
          finalise(record, record.source);
        } else {
          record.deferred = true;
          notify();
        }
        break;
      }
      case CALLBACK.autocomplete:
        record.choices = (Array.isArray(data.choices) ? data.choices : []) as InteractionRecord['choices'];
        notify();
        break;
      case CALLBACK.modal:
        notify();
        break;
      default:
        record.acknowledged = false;
        return apiError(400, 50035, 'Invalid Form Body');
    }
    if (call.query.with_response !== 'true') return { status: 204 };
    return {
      status: 200,
      body: {
        interaction: {
          id: record.id,
          type: record.type,
          response_message_id: resource?.id,
          response_message_loading: body.type === CALLBACK.defer,
          response_message_ephemeral: resource ? (resource.flags & EPHEMERAL) !== 0 : false,
        },
        resource: { type: body.type, ...(resource ? { message: messagePayload(resource) } : {}) },
      },
    };
  };

  const webhookMessage = (record: InteractionRecord, messageId: string): MessageRecord | undefined => {
    if (messageId === '@original') return record.original?.deleted ? undefined : record.original;
    const message = messages.get(messageId);
    return message && message.interactionId === record.id && !message.deleted ? message : undefined;
  };

  const onWebhookEdit = (call: RestCall, token_: string, messageId: string): RestResponse => {
    const record = interactionFor(token_);
    if ('status' in record) return record;
    const message = webhookMessage(record, messageId);
    if (!message) return apiError(404, 10008, 'Unknown Message');
    const body = (call.body ?? {}) as Record<string, unknown>;
    applyBody(message, body);
    // The loading flag goes once the deferred response is filled in.
    message.flags &= ~128;
    message.editedTimestamp = new Date().toISOString();
    if (message === record.original) finalise(record, message);
    else notify();
    return { status: 200, body: messagePayload(message) };
  };

  const onFollowUp = (call: RestCall, token_: string): RestResponse => {
    const record = interactionFor(token_);
    if ('status' in record) return record;
    if (!record.acknowledged) return apiError(404, 10015, 'Unknown Webhook');
    const message = newBotMessage(
      record.guild,
      record.channel.id,
      (call.body ?? {}) as Record<string, unknown>,
      record.id,
    );
    record.followUps.push(makeReply(record, message, false));
    notify();
    return { status: 200, body: messagePayload(message) };
  };

  const onChannelPost = (call: RestCall, channelId: string): RestResponse => {
    const found = findChannel(channelId);
    if (!found?.guild.botPresent) return apiError(404, 10003, 'Unknown Channel');
    const perms = channelPermissions(found.guild, botMember(found.guild), found.channel);
    const needed = PermissionFlagsBits.ViewChannel | PermissionFlagsBits.SendMessages;
    if ((perms & needed) !== needed) return apiError(403, 50013, 'Missing Permissions');
    const message = newBotMessage(
      found.guild,
      channelId,
      (call.body ?? {}) as Record<string, unknown>,
      undefined,
    );
    const list = posted.get(channelId) ?? [];
    list.push(message.id);
    posted.set(channelId, list);
    notify();
    return { status: 200, body: messagePayload(message) };
  };

  const storeCommands = (list: Json[], body: unknown, guildId: string | undefined): RestResponse => {
    const incoming = Array.isArray(body) ? (body as Record<string, unknown>[]) : [];
    const stored = incoming.map((command) => ({
      id: snowflake(),
      application_id: applicationId,
      version: snowflake(),
      type: 1,
      default_member_permissions: null,
      dm_permission: true,
      nsfw: false,
      contexts: null,
      integration_types: [0],
      ...(guildId ? { guild_id: guildId } : {}),
      ...command,
    }));
    list.splice(0, list.length, ...stored);
    notify();
    return { status: 200, body: stored };
  };

  const guildCommands = (guildId: string): Json[] => {
    let list = commands.guild.get(guildId);
    if (!list) {
      list = [];
      commands.guild.set(guildId, list);
    }
    return list;
  };

  const routes: Route[] = [
    {
      method: 'GET',
      pattern: /^\/gateway\/bot$/,
      bot: true,
      handle: () => ({
        status: 200,
        body: {
          url: gatewayUrl,
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
        },
      }),
    },
    { method: 'GET', pattern: /^\/gateway$/, handle: () => ({ status: 200, body: { url: gatewayUrl } }) },
    {
      method: 'GET',
      pattern: /^\/users\/@me$/,
      bot: true,
      handle: () => ({ status: 200, body: { ...userPayload(botUser), verified: true, flags: 0 } }),
    },
    {
      method: 'GET',
      pattern: /^\/applications\/@me$/,
      bot: true,
      handle: () => ({
        status: 200,
        body: {
          id: applicationId,
          name: botUser.name,
          flags: 0,
          bot_public: true,
          bot: userPayload(botUser),
          ...(o.applicationOwnerId === undefined
            ? {}
            : {
                owner: {
                  id: o.applicationOwnerId,
                  username: 'owner',
                  discriminator: '0',
                  global_name: null,
                  avatar: null,
                },
              }),
        },
      }),
    },
    {
      method: 'PUT',
      pattern: /^\/applications\/(\d+)\/commands$/,
      bot: true,
      handle: (call) => storeCommands(commands.global, call.body, undefined),
    },
    {
      method: 'GET',
      pattern: /^\/applications\/(\d+)\/commands$/,
      bot: true,
      handle: () => ({ status: 200, body: commands.global }),
    },
    {
      method: 'PUT',
      pattern: /^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/,
      bot: true,
      handle: (call, [, guildId = '']) =>
        guilds.has(guildId)
          ? storeCommands(guildCommands(guildId), call.body, guildId)
          : apiError(404, 10004, 'Unknown Guild'),
    },
    {
      method: 'GET',
      pattern: /^\/applications\/(\d+)\/guilds\/(\d+)\/commands$/,
      bot: true,
      handle: (_call, [, guildId = '']) => ({ status: 200, body: commands.guild.get(guildId) ?? [] }),
    },
    {
      method: 'POST',
      pattern: /^\/interactions\/(\d+)\/([^/]+)\/callback$/,
      handle: (call, [id = '', token_ = '']) => onCallback(call, id, token_),
    },
    {
      method: 'PATCH',
      pattern: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      handle: (call, [, token_ = '', messageId = '']) => onWebhookEdit(call, token_, messageId),
    },
    {
      method: 'GET',
      pattern: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      handle: (_call, [, token_ = '', messageId = '']) => {
        const record = interactionFor(token_);
        if ('status' in record) return record;
        const message = webhookMessage(record, messageId);
        return message
          ? { status: 200, body: messagePayload(message) }
          : apiError(404, 10008, 'Unknown Message');
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/([^/]+)$/,
      handle: (_call, [, token_ = '', messageId = '']) => {
        const record = interactionFor(token_);
        if ('status' in record) return record;
        const message = webhookMessage(record, messageId);
        if (!message) return apiError(404, 10008, 'Unknown Message');
        message.deleted = true;
        notify();
        return { status: 204 };
      },
    },
    {
      method: 'POST',
      pattern: /^\/webhooks\/(\d+)\/([^/]+)$/,
      handle: (call, [, token_ = '']) => onFollowUp(call, token_),
    },
    {
      method: 'POST',
      pattern: /^\/channels\/(\d+)\/messages$/,
      bot: true,
      handle: (call, [channelId = '']) => onChannelPost(call, channelId),
    },
    {
      method: 'PATCH',
      pattern: /^\/channels\/(\d+)\/messages\/(\d+)$/,
      bot: true,
      handle: (call, [channelId = '', messageId = '']) => {
        const message = messages.get(messageId);
        if (!message || message.channelId !== channelId || message.deleted || message.author) {
          return apiError(404, 10008, 'Unknown Message');
        }
        applyBody(message, (call.body ?? {}) as Record<string, unknown>);
        message.editedTimestamp = new Date().toISOString();
        notify();
        return { status: 200, body: messagePayload(message) };
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/channels\/(\d+)\/messages\/(\d+)$/,
      bot: true,
      handle: (_call, [channelId = '', messageId = '']) => {
        const message = messages.get(messageId);
        if (!message || message.channelId !== channelId || message.deleted) {
          return apiError(404, 10008, 'Unknown Message');
        }
        message.deleted = true;
        notify();
        return { status: 204 };
      },
    },
    {
      method: 'GET',
      pattern: /^\/channels\/(\d+)$/,
      bot: true,
      handle: (_call, [channelId = '']) => {
        const found = findChannel(channelId);
        return found
          ? { status: 200, body: channelPayload(found.channel) }
          : apiError(404, 10003, 'Unknown Channel');
      },
    },
    {
      method: 'GET',
      pattern: /^\/guilds\/(\d+)\/members\/(\d+)$/,
      bot: true,
      handle: (_call, [guildId = '', userId = '']) => {
        const member = guilds.get(guildId)?.members.get(userId);
        return member ? { status: 200, body: memberPayload(member) } : apiError(404, 10007, 'Unknown Member');
      },
    },
  ];

  const server = await createRestServer({
    token,
    routes,
    record: (call) => {
      rest.push(call);
    },
    onUpgrade: (request, socket, head) => {
      if (new URL(request.url ?? '/', 'http://127.0.0.1').pathname === '/gateway') {
        gateway.handleUpgrade(request, socket, head);
      } else socket.destroy();
    },
  });
  const restUrl = `http://127.0.0.1:${server.port}/api`;
  const gatewayUrl = `ws://127.0.0.1:${server.port}/gateway`;

  const createGuild = (g: { name: string }): Guild => {
    const id = snowflake();
    const botRoleId = snowflake();
    const state: GuildState = {
      id,
      name: g.name,
      ownerId: snowflake(),
      roles: [
        { id, name: '@everyone', permissions: DEFAULT_EVERYONE_PERMISSIONS, position: 0, managed: false },
        {
          id: botRoleId,
          name: botUser.name,
          permissions: DEFAULT_BOT_PERMISSIONS,
          position: 1,
          managed: true,
        },
      ],
      channels: new Map(),
      members: new Map(),
      voice: new Map(),
      botRoleId,
      botPresent: true,
    };
    state.members.set(botUser.id, {
      id: botUser.id,
      name: botUser.name,
      nick: null,
      bot: true,
      roleIds: [botRoleId],
      joinedAt: new Date().toISOString(),
    });
    guilds.set(id, state);
    const handle = guildHandle(state);
    handles.set(id, handle);
    if (botConnected()) gateway.dispatch('GUILD_CREATE', guildCreatePayload(state, voiceSessionOf));
    return handle;
  };

  const guildHandle = (guild: GuildState): Guild => {
    const addChannel = (name: string, type: 'text' | 'voice', userLimit: number, deny: bigint): Channel => {
      const channel: ChannelState = {
        id: snowflake(),
        guildId: guild.id,
        name,
        type,
        position: guild.channels.size,
        userLimit,
        overwrites: deny ? [{ id: botUser.id, type: 1, allow: 0n, deny }] : [],
      };
      guild.channels.set(channel.id, channel);
      if (botConnected() && guild.botPresent) {
        gateway.dispatch('CHANNEL_CREATE', channelPayload(channel), INTENTS.guilds);
      }
      return { id: channel.id, name, type, guildId: guild.id };
    };
    const bot: Member = { id: botUser.id, name: botUser.name, guildId: guild.id };
    return {
      id: guild.id,
      name: guild.name,
      bot,
      addTextChannel: (name) => addChannel(name, 'text', 0, 0n),
      addVoiceChannel: (name, v) =>
        addChannel(name, 'voice', v?.userLimit ?? 0, v?.deny?.botPermissions ?? 0n),
      addMember: (m) => {
        const member: MemberState = {
          id: m.id ?? snowflake(),
          name: m.name,
          nick: m.nick ?? null,
          bot: m.bot ?? false,
          roleIds: [],
          joinedAt: new Date().toISOString(),
        };
        if (m.permissions !== undefined) {
          const roleId = snowflake();
          guild.roles.push({
            id: roleId,
            name: `${m.name}'s role`,
            permissions: m.permissions,
            position: guild.roles.length,
            managed: false,
          });
          member.roleIds.push(roleId);
          if (botConnected() && guild.botPresent) {
            const role = guild.roles.at(-1);
            gateway.dispatch(
              'GUILD_ROLE_CREATE',
              { guild_id: guild.id, role: { ...role, permissions: m.permissions.toString() } },
              INTENTS.guilds,
            );
          }
        }
        guild.members.set(member.id, member);
        if (botConnected() && guild.botPresent) {
          gateway.dispatch(
            'GUILD_MEMBER_ADD',
            { guild_id: guild.id, ...memberPayload(member) },
            INTENTS.guildMembers,
          );
        }
        return { id: member.id, name: member.name, guildId: guild.id };
      },
      setBotPermissions: (permissions, channel) => {
        if (!channel) {
          const role = guild.roles.find((r) => r.id === guild.botRoleId);
          if (role) role.permissions = permissions;
          if (role && botConnected() && guild.botPresent) {
            gateway.dispatch(
              'GUILD_ROLE_UPDATE',
              {
                guild_id: guild.id,
                role: {
                  id: role.id,
                  name: role.name,
                  color: 0,
                  hoist: false,
                  position: role.position,
                  permissions: permissions.toString(),
                  managed: true,
                  mentionable: false,
                  flags: 0,
                },
              },
              INTENTS.guilds,
            );
          }
          return;
        }
        const state = channelOf(channel);
        const others = state.overwrites.filter((w) => !(w.type === 1 && w.id === botUser.id));
        state.overwrites.splice(0, state.overwrites.length, ...others, {
          id: botUser.id,
          type: 1,
          allow: permissions,
          deny: ALL_PERMISSIONS & ~permissions,
        });
        if (botConnected() && guild.botPresent) {
          gateway.dispatch('CHANNEL_UPDATE', channelPayload(state), INTENTS.guilds);
        }
      },
      joinVoice: (member, channel) => {
        const state = channelOf(channel);
        const who = memberOf(member);
        if (state.type !== 'voice')
          throw new Error(`discord emulator: ${channel.name} is not a voice channel`);
        if (isFullFor(guild, state, who))
          throw new Error(`discord emulator: ${channel.name} is full for ${member.name}`);
        dispatchVoiceState(guild, who, state.id);
      },
      leaveVoice: (member) => dispatchVoiceState(guild, memberOf(member), null),
      moveBot: (channel) => {
        const self = botMember(guild);
        if (!channel) {
          dispatchVoiceState(guild, self, null);
          disconnectBotVoice(guild);
          notify();
          return;
        }
        const state = channelOf(channel);
        dispatchVoiceState(guild, self, state.id);
        // The old voice socket goes with 4014 after the new server is announced, as when an admin drags a bot.
        voice.closeSocket(guild.id, 4014, 'Disconnected.');
        const voiceToken = voice.allocate(guild.id, self.id, voiceSessionOf(self.id));
        gateway.dispatch('VOICE_SERVER_UPDATE', {
          token: voiceToken,
          guild_id: guild.id,
          endpoint: voice.endpoint,
        });
        notify();
      },
      deleteChannel: (channel) => {
        const state = channelOf(channel);
        for (const userId of occupants(guild, state.id)) {
          const member = guild.members.get(userId);
          if (member) dispatchVoiceState(guild, member, null);
          if (userId === botUser.id) disconnectBotVoice(guild);
        }
        guild.channels.delete(state.id);
        gateway.dispatch('CHANNEL_DELETE', channelPayload(state), INTENTS.guilds);
        notify();
      },
      removeBot: () => {
        disconnectBotVoice(guild);
        guild.voice.delete(botUser.id);
        guild.botPresent = false;
        gateway.dispatch('GUILD_DELETE', { id: guild.id });
        notify();
      },
      botVoiceChannelId: () => guild.voice.get(botUser.id) ?? null,
      voiceMembers: (channel) => occupants(guild, channel.id),
    };
  };

  const findCommand = (guildId: string, name: string): Json | undefined =>
    commands.guild.get(guildId)?.find((c) => c.name === name) ?? commands.global.find((c) => c.name === name);

  /** Builds `data.options` and `data.resolved` from test values, typed by the registered command if any. */
  const buildOptions = (
    guild: GuildState,
    channel: ChannelState,
    definition: Json,
    values: Record<string, string | number | boolean | Channel | Member>,
    subcommand: string | undefined,
    focused: string | undefined,
  ): { options: Json[]; resolved: Record<string, Record<string, unknown>> } => {
    const resolved: Record<string, Record<string, unknown>> = {};
    const put = (kind: string, id: string, value: unknown): void => {
      resolved[kind] ??= {};
      (resolved[kind] as Record<string, unknown>)[id] = value;
    };
    const subDefinition = subcommand
      ? (definition?.options ?? []).find((o: Json) => o.name === subcommand && o.type === 1)
      : definition;
    const defined: Json[] = subDefinition?.options ?? [];
    const options = Object.entries(values).map(([name, value]) => {
      const declared = defined.find((o) => o.name === name)?.type as number | undefined;
      const base = { name, ...(name === focused ? { focused: true } : {}) };
      if (typeof value === 'object' && 'type' in value) {
        const target = channelOf(value);
        const perms = channelPermissions(guild, botMember(guild), target);
        put('channels', target.id, { ...channelPayload(target), permissions: perms.toString() });
        return { ...base, type: 7, value: target.id };
      }
      if (typeof value === 'object') {
        const target = memberOf(value);
        put('users', target.id, userPayload(target));
        put('members', target.id, {
          ...memberPayload(target, false),
          permissions: channelPermissions(guild, target, channel).toString(),
        });
        return { ...base, type: 6, value: target.id };
      }
      if (typeof value === 'boolean') return { ...base, type: 5, value };
      if (typeof value === 'number') {
        return { ...base, type: declared ?? (Number.isInteger(value) ? 4 : 10), value };
      }
      return { ...base, type: declared === 4 || declared === 10 ? declared : 3, value };
    });
    return { options: subcommand ? [{ type: 1, name: subcommand, options }] : options, resolved };
  };

  const interactionBase = (
    member: Member,
    channel: ChannelState,
    type: 2 | 3 | 4,
    locale: string | undefined,
  ): { record: InteractionRecord; payload: Record<string, unknown> } => {
    const guild = guildOf(member.guildId);
    if (!guild.botPresent) throw new Error('discord emulator: the bot is not in this guild');
    const who = memberOf(member);
    const record: InteractionRecord = {
      id: snowflake(),
      token: `aW50ZXJhY3Rpb24${randomToken(48)}`,
      type,
      createdAt: Date.now(),
      guild,
      channel,
      name: '',
      source: undefined,
      acknowledged: false,
      deferred: false,
      original: undefined,
      final: undefined,
      edits: [],
      followUps: [],
      choices: undefined,
      expired: false,
    };
    const appPermissions = channelPermissions(guild, botMember(guild), channel);
    const payload = {
      id: record.id,
      application_id: applicationId,
      type,
      token: record.token,
      version: 1,
      guild_id: guild.id,
      guild: { id: guild.id, locale: 'en-US', features: [] },
      channel_id: channel.id,
      channel: { ...channelPayload(channel), permissions: appPermissions.toString() },
      member: { ...memberPayload(who), permissions: channelPermissions(guild, who, channel).toString() },
      app_permissions: appPermissions.toString(),
      locale: locale ?? 'en-US',
      guild_locale: 'en-US',
      entitlements: [],
      authorizing_integration_owners: { '0': guild.id },
      context: 0,
      attachment_size_limit: 10_485_760,
    };
    return { record, payload };
  };

  /** Dispatches an interaction and waits for its final answer; Discord forgets it after the response window. */
  const run = (
    record: InteractionRecord,
    payload: Record<string, unknown>,
    timeoutMs: number,
  ): Promise<Reply> => {
    interactions.set(record.token, record);
    gateway.dispatch('INTERACTION_CREATE', payload);
    const expiry = setTimeout(() => {
      timers.delete(expiry);
      if (!record.acknowledged) {
        record.expired = true;
        notify();
      }
    }, interactionResponseMs);
    timers.add(expiry);
    return waitFor(`an answer to ${record.name}`, timeoutMs, () => {
      if (record.expired) {
        throw new Error(
          `discord emulator: the bot did not respond to ${record.name} within ${interactionResponseMs} ms`,
        );
      }
      return record.final;
    });
  };

  const defaultTextChannel = (guild: GuildState): ChannelState => {
    const channel = [...guild.channels.values()].find((c) => c.type === 'text');
    if (!channel)
      throw new Error(`discord emulator: guild ${guild.name} has no text channel; pass o.channel`);
    return channel;
  };

  const findButton = (components: Json[], customId: string): Json | undefined => {
    for (const component of components) {
      if (component?.custom_id === customId) return component;
      const inner = findButton(component?.components ?? [], customId);
      if (inner) return inner;
    }
    return undefined;
  };

  const emulator: DiscordEmulator = {
    restUrl,
    gatewayUrl,
    token,
    applicationId,
    botUserId: botUser.id,
    rest,
    commands,
    identifies: gateway.identifies,
    gatewayHeartbeats: gateway.heartbeats,
    voiceHandshakes: voice.handshakes,
    voiceRequests,
    get rejectedVoicePackets() {
      return voice.rejected.count;
    },
    createGuild,
    untilReady: () => gateway.untilReady(),
    untilSessionRestored: (w) => {
      const identifiesBefore = gateway.identifies.length;
      let resumed = false;
      const onResumed = (): void => {
        resumed = true;
      };
      resumedListeners.add(onResumed);
      return waitFor<'resumed' | 'identified'>(
        'the gateway session to come back',
        w?.timeoutMs ?? 20_000,
        () => {
          if (gateway.identifies.length > identifiesBefore && gateway.isReady()) return 'identified';
          return resumed ? 'resumed' : undefined;
        },
      ).finally(() => resumedListeners.delete(onResumed));
    },
    slash: (member, command, values = {}, s = {}) => {
      const guild = guildOf(member.guildId);
      const channel = s.channel ? channelOf(s.channel) : defaultTextChannel(guild);
      const definition = findCommand(guild.id, command);
      const { record, payload } = interactionBase(member, channel, 2, s.locale);
      const built = buildOptions(guild, channel, definition, values, s.subcommand, undefined);
      Object.assign(record, { name: `/${command}` });
      payload.data = {
        id: definition?.id ?? snowflake(),
        name: command,
        type: 1,
        guild_id: guild.id,
        options: built.options,
        ...(Object.keys(built.resolved).length > 0 ? { resolved: built.resolved } : {}),
      };
      return run(record, payload, s.timeoutMs ?? 15_000);
    },
    autocomplete: (member, command, values, focused, s = {}) => {
      const guild = guildOf(member.guildId);
      const channel = s.channel ? channelOf(s.channel) : defaultTextChannel(guild);
      const definition = findCommand(guild.id, command);
      const { record, payload } = interactionBase(member, channel, 4, undefined);
      const built = buildOptions(guild, channel, definition, values, s.subcommand, focused);
      Object.assign(record, { name: `autocomplete of /${command} ${focused}` });
      payload.data = {
        id: definition?.id ?? snowflake(),
        name: command,
        type: 1,
        guild_id: guild.id,
        options: built.options,
      };
      interactions.set(record.token, record);
      gateway.dispatch('INTERACTION_CREATE', payload);
      return waitFor(`choices for ${focused}`, interactionResponseMs, () => record.choices);
    },
    press: (member, message, customId, s = {}) => {
      const source = messages.get(message.id);
      if (!source || source.deleted) throw new Error(`discord emulator: message ${message.id} is gone`);
      const button = findButton(source.components, customId);
      if (!button) throw new Error(`discord emulator: no component ${customId} on message ${message.id}`);
      if (button.disabled) throw new Error(`discord emulator: button ${customId} is disabled`);
      const guild = guildOf(member.guildId);
      const channel = guild.channels.get(source.channelId);
      if (!channel) throw new Error(`discord emulator: channel of message ${message.id} is gone`);
      const { record, payload } = interactionBase(member, channel, 3, undefined);
      Object.assign(record, { name: `button ${customId}`, source });
      payload.data = { custom_id: customId, component_type: button.type ?? 2 };
      payload.message = messagePayload(source);
      return run(record, payload, s.timeoutMs ?? 15_000);
    },
    sendMessage: (member, channel, content, s = {}) => {
      const guild = guildOf(member.guildId);
      const state = channelOf(channel);
      const author = memberOf(member);
      const message: MessageRecord = {
        id: snowflake(),
        channelId: state.id,
        guildId: guild.id,
        author,
        content,
        embeds: [],
        components: [],
        allowedMentions: undefined,
        flags: s.silent ? 4096 : 0,
        replyTo: undefined,
        files: [],
        interactionId: undefined,
        timestamp: new Date().toISOString(),
        editedTimestamp: null,
        deleted: false,
      };
      messages.set(message.id, message);
      const mentions = (s.mentions ?? []).map(memberOf);
      const mentionsBot = mentions.some((m) => m.id === botUser.id);
      // Without the MESSAGE_CONTENT intent Discord blanks content, embeds and attachments, unless the bot is mentioned.
      const readable = (gateway.intents() & INTENTS.messageContent) !== 0 || mentionsBot;
      const authorUser = { ...userPayload(author), bot: s.bot ?? author.bot };
      gateway.dispatch(
        'MESSAGE_CREATE',
        {
          id: message.id,
          channel_id: state.id,
          guild_id: guild.id,
          author: s.webhook ? { ...authorUser, bot: true, discriminator: '0000' } : authorUser,
          ...(s.webhook ? { webhook_id: snowflake() } : { member: memberPayload(author, false) }),
          content: readable ? content : '',
          timestamp: message.timestamp,
          edited_timestamp: null,
          tts: false,
          mention_everyone: false,
          mentions: mentions.map((m) => ({ ...userPayload(m), member: memberPayload(m, false) })),
          mention_roles: [],
          attachments: readable
            ? (s.attachments ?? []).map((a, i) => ({
                id: `${message.id}${i}`,
                filename: a.filename,
                content_type: a.content_type,
                size: 1024,
                url: `https://cdn.invalid/${a.filename}`,
                proxy_url: `https://cdn.invalid/${a.filename}`,
              }))
            : [],
          embeds: [],
          components: [],
          sticker_items: (s.stickers ?? []).map((st) => ({ id: st.id, name: st.name, format_type: 1 })),
          pinned: false,
          type: 0,
          flags: message.flags,
        },
        INTENTS.guildMessages,
      );
      return snapshot(message);
    },
    deleteMessage: (message) => {
      const record = messages.get(message.id);
      if (record) record.deleted = true;
      const guildId = record?.guildId ?? findChannel(message.channelId)?.guild.id;
      gateway.dispatch(
        'MESSAGE_DELETE',
        { id: message.id, channel_id: message.channelId, ...(guildId ? { guild_id: guildId } : {}) },
        INTENTS.guildMessages,
      );
    },
    channelMessages: (channel) =>
      (posted.get(channel.id) ?? []).flatMap((id) => {
        const message = messages.get(id);
        return message ? [snapshot(message)] : [];
      }),
    untilChannelMessage: (channel, w = {}) => {
      const seen = posted.get(channel.id)?.length ?? 0;
      return waitFor(`a message in #${channel.name}`, w.timeoutMs ?? 10_000, () => {
        for (const id of (posted.get(channel.id) ?? []).slice(seen)) {
          const message = messages.get(id);
          if (message && (!w.match || w.match(snapshot(message)))) return snapshot(message);
        }
        return undefined;
      });
    },
    voice: (guild) => captureOf(guild.id).capture,
    faults: {
      closeVoice: (guild, code) => {
        voice.closeSocket(guild.id, code, `Emulated close ${code}.`);
      },
      dropVoiceHeartbeats: (on) => voice.dropHeartbeats(on),
      dropGatewayHeartbeats: (on) => gateway.dropHeartbeats(on),
      reconnectGateway: () => gateway.reconnect(),
      invalidateSession: (resumable) => gateway.invalidateSession(resumable),
      refuseVoiceJoin: (on) => {
        refuseVoiceJoin = on;
      },
      delayVoiceHandshake: (ms) => voice.delayHandshake(ms),
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      listeners.clear();
      for (const sink of captures.values()) sink.dispose();
      gateway.close();
      await Promise.all([server.close(), voice.close()]);
    },
  };
  return emulator;
}
