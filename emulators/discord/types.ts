/** The emulator's public types: what tests hold and call. */

import type { UserInstalledSlashOptions, UserInstallPlace } from './app-commands.ts';
import type { StoredFile } from './attachments.ts';
import type { VoiceCapture } from './capture.ts';
import type { DaveGroup } from './dave-group.ts';
import type { DaveEvent } from './dave-protocol.ts';
import type { IdentifyRecord, ResumeRecord, SessionView } from './gateway.ts';
import type { buildHeldReader } from './held-reader.ts';
import type { RestCall } from './rest.ts';
import type { HeldSummary, UdpReceiver } from './udp-receiver.ts';

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
  readonly type: 'text' | 'voice' | 'stage';
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
  /** Attachments uploaded with it (multipart), with their bytes and voice-message metadata. */
  readonly files: readonly StoredFile[];
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
  /** A stage channel (type 13): joined like a voice channel, but everyone on it sits in the audience (`suppress`). */
  addStageChannel(name: string): Channel;
  /** A stage moderator invites a member or the bot (`guild.bot`) on the stage to speak: `suppress` false. */
  inviteToSpeak(member: Member): void;
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
  /** The bot is invited back (after {@link removeBot}): GUILD_CREATE, as for a server it just joined. */
  inviteBot(): void;
  /**
   * A moderator server-mutes (or unmutes) a member or the bot (`guild.bot`): its voice state's `mute`, sent as a
   * VOICE_STATE_UPDATE when it is in a voice channel.
   */
  serverMute(member: Member, muted: boolean): void;
  /** The server's AFK channel (a voice channel, or none): GUILD_UPDATE. */
  setAfkChannel(channel: Channel | null): void;
  /** The voice channel the bot sits in, as far as the emulator knows. */
  botVoiceChannelId(): string | null;
  /**
   * What a moderator sees of a member's (or the bot's) voice state: server-muted, sitting in a stage's audience
   * (`suppress`), and whether it raised its hand to speak.
   */
  voiceFlags(member: Member): { muted: boolean; suppressed: boolean; requestedToSpeak: boolean };
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
  /**
   * The application's flags (READY and `GET /applications/@me`); default {@link APPLICATION_FLAGS}.messageContent,
   * the Message Content intent enabled. 0 models an application whose intent was never enabled.
   */
  applicationFlags?: number;
  /**
   * Offer DAVE (E2EE) v1 to clients announcing it, as Discord does: default true. False declines it
   * (`dave_protocol_version: 0`): transport encryption only.
   */
  dave?: boolean;
  /**
   * Offer `aead_xchacha20_poly1305_rtpsize` after `aead_aes256_gcm_rtpsize` in the voice READY, as Discord does:
   * default true. False offers AES-256-GCM only (a client that selects XChaCha is closed with 4016), so a test can
   * drive a client that prefers XChaCha through its AES path.
   */
  xchacha?: boolean;
  /**
   * The nice value of the thread that receives and timestamps voice packets (Linux; below 0 needs root). On
   * Discord the media server is its own machine; on a shared, busy machine a receiving thread that waits for a core
   * stamps the wait as the sender's lateness. Default: the process's own. See {@link DiscordEmulator.receiverNice}.
   */
  receiverNice?: number;
  /** The shard count `GET /gateway/bot` recommends; default one per 1000 guilds (at least 1), as Discord. */
  shards?: number;
  /** `session_start_limit.max_concurrency` of `GET /gateway/bot`: default 1 (large bots get 16 or more). */
  maxConcurrency?: number;
  /**
   * How long a gateway session whose socket closed (other than 1000/1001) or dropped stays resumable; after it a
   * RESUME gets op 9 `d: false`. Default 180 000 ms (Discord keeps sessions for minutes; it publishes no figure).
   */
  gatewayResumeWindowMs?: number;
  /** Most guilds one gateway session may carry before IDENTIFY is closed with 4011 (sharding required); 2500. */
  maxGuildsPerShard?: number;
  /**
   * Worker threads the members' DAVE clients run in, off the bot's event loop (default 2: on Discord each member
   * is its own machine, and two members' commits are computed at the same time).
   */
  daveListenerThreads?: number;
  /**
   * Whether the members' clients decrypt each frame the bot sends (default true: the capture says who heard what).
   * False: the capture records each frame's arrival time and RTP header and no member decrypts it; its transport
   * encryption is authenticated and removed when its payload (or whether it is silence or end-to-end encrypted) is
   * first read, a packet that fails then counting in `rejectedVoicePackets`. For benchmarks of hundreds of streams
   * on one machine, where decrypting on arrival would take the bot's cores and delay the arrival times measured.
   */
  membersDecrypt?: boolean;
  /** Told of every step of the DAVE flows (and each voice session description), with times: for benchmarks. */
  onDaveEvent?: (event: DaveEvent) => void;
}

/** Application flags the emulator knows: the Message Content intent (1 << 19; 1 << 18 is its limited form). */
export const APPLICATION_FLAGS = { messageContent: 1 << 19, messageContentLimited: 1 << 18 } as const;

/** DAVE faults, each injected once into a guild's voice session (see dave-group.ts). */
export interface DaveFaults {
  /** An Add proposal for a user the bot was never told about (no op 11 first). */
  proposeUnknownUser(guild: Guild): void;
  /** A commit (op 29) that is not a valid MLS message. */
  malformedCommit(guild: Guild): void;
  /** A welcome (op 30) that is not a valid MLS message. */
  malformedWelcome(guild: Guild): void;
  /** An execute (op 22) for a transition never prepared, and a prepare (op 21) never executed. */
  invalidTransition(guild: Guild): void;
  /** The gateway ignores the bot's next key package (now, or in its next voice session if none is live). */
  rejectNextKeyPackage(guild: Guild): void;
}

/** Deliberate misbehaviour of the emulated Discord. */
export interface Faults {
  /** Closes the guild's voice websocket with `code` (4014 kicked, 4006 session invalid, 4015 crashed, 4017 DAVE). */
  closeVoice(guild: Guild, code: number): void;
  dropVoiceHeartbeats(on: boolean): void;
  dropGatewayHeartbeats(on: boolean): void;
  /** Gateway op 7: the client reconnects and resumes. */
  reconnectGateway(shardId?: number): void;
  /** Gateway op 9. */
  invalidateSession(resumable: boolean, shardId?: number): void;
  /**
   * Delivers the next `event` dispatch twice, with the same sequence number, as a RESUME naming a sequence older
   * than what the client had handled makes a replay do (discord.js can name one: see src/discord/first-sight.ts).
   */
  deliverTwice(event: string): void;
  /** While on, a voice join gets its VOICE_STATE_UPDATE but never a VOICE_SERVER_UPDATE. */
  refuseVoiceJoin(on: boolean): void;
  /** Holds the voice READY back by `ms` on every voice handshake (0 turns it off). */
  delayVoiceHandshake(ms: number): void;
  /** Loses this share (0–1) of the audio packets the bot sends in `guild` (UDP loss; 0 turns it off). */
  loseVoicePackets(guild: Guild, share: number): void;
  /** While on, the gateway is down: the bot is told to reconnect and every new gateway connection is refused. */
  refuseGateway(on: boolean): void;
  /**
   * While on, `member`'s Discord client is out of its voice channel's call (its connection to the voice server
   * broke; op 13 to the others, its DAVE client leaves the group) though its voice state stays in the channel;
   * off, it reconnects (op 11, a new DAVE client), as a Discord client does after a network change.
   */
  dropMemberVoiceClient(member: Member, on: boolean): void;
  readonly dave: DaveFaults;
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
  readonly identifies: readonly IdentifyRecord[];
  /** Every gateway RESUME accepted, in order, with how many missed dispatches it replayed. */
  readonly resumes: readonly ResumeRecord[];
  /** IDENTIFYs and accepted RESUMEs of one shard id so far. */
  gatewayCounts(shardId: number): { identifies: number; resumes: number };
  /**
   * The gateway sessions held, one per shard id: one closed with another code than 1000/1001, or dropped, stays
   * until resumed, replaced or invalidated; a close 1000/1001 ends it.
   */
  gatewaySessions(): SessionView[];
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
  /**
   * `member` right-clicks a member's `message` → Apps → `command` (a message command: `target_id` and the message in
   * `resolved.messages`, as MESSAGE_CREATE carried it); resolves to the answer.
   */
  messageCommand(
    member: Member,
    message: SentMessage,
    command: string,
    o?: { timeoutMs?: number },
  ): Promise<Reply>;
  /**
   * `member` runs `/command` from Herald installed to their account (`authorizing_integration_owners` {1: user}), in
   * a DM (`{ dm: 'bot' }` with the app, `'private'` another) or a server channel, the bot there or not.
   */
  userInstalledSlash(
    member: Member,
    command: string,
    options: Record<string, string | number | boolean>,
    place: UserInstallPlace,
    o?: UserInstalledSlashOptions,
  ): Promise<Reply>;
  /** `member` types into `focused` of a user-installed `/command`; resolves to the choices the bot offered. */
  userInstalledAutocomplete(
    member: Member,
    command: string,
    options: Record<string, string | number>,
    focused: string,
    place: UserInstallPlace,
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
  /** MESSAGE_DELETE for a message: only its ids, as Discord sends it. */
  deleteMessage(message: SentMessage): void;
  /** The author edits a member's message: MESSAGE_UPDATE with the whole edited message, as Discord sends it. */
  editMessage(message: SentMessage, content: string): void;
  /** Messages the bot posted in `channel` through REST, in order (latest content). */
  channelMessages(channel: Channel): SentMessage[];
  /** Resolves with the next message the bot posts in `channel` (matching `match`). @throws on timeout (10 s). */
  untilChannelMessage(
    channel: Channel,
    o?: { timeoutMs?: number; match?: (m: SentMessage) => boolean },
  ): Promise<SentMessage>;
  /** What the bot played in `guild`, across reconnects. */
  voice(guild: Guild): VoiceCapture;
  /** Turns the members' decryption of each frame on or off from now on (see `membersDecrypt` in the options). */
  setMembersDecrypt(on: boolean): void;
  /**
   * Has the voice server's receiving thread read its socket every `ms` while traffic is light instead of waking for
   * each datagram (0, the default: for each): at hundreds of streams the wake-ups cost this machine's cores
   * several µs a packet, on the bot's side of loopback too. Arrival times may then read up to `ms` late.
   */
  setReceiverNap(ms: number): void;
  /**
   * Holds every voice packet on the receiving thread from now on, with its arrival time, until
   * {@link releaseVoicePackets}: while held no packet costs the emulator's main thread anything, and no capture sees
   * it. For benchmarks of hundreds of streams, where that thread shares the bot's cores; released packets are
   * captured as when members do not decrypt, mapped to the voice sessions as they stand when released. With
   * `reader`, a program built by {@link buildHeldReader}, that program reads the socket meanwhile (see
   * {@link UdpReceiver.hold}); {@link heldVoicePackets} says who holds them.
   */
  holdVoicePackets(reader?: string): void;
  /** What is held: packets, distinct SSRCs, and the last arrival (`performance.now()`; undefined: none). */
  heldVoicePackets(): Promise<HeldSummary>;
  /** Captures every held packet, in arrival order, and stops holding. */
  releaseVoicePackets(): Promise<void>;
  /** Voice packets that failed to decrypt or matched no session. */
  readonly rejectedVoicePackets: number;
  /** Voice packets lost on purpose by {@link Faults.loseVoicePackets}. */
  readonly lostVoicePackets: number;
  /** Voice handshakes accepted so far: IDENTIFY (a fresh voice session) and RESUME. */
  readonly voiceHandshakes: { readonly identified: number; readonly resumed: number };
  /** The voice packets' receiving thread's nice value as set ({@link DiscordEmulatorOptions.receiverNice}), or why not. */
  readonly receiverNice: number | string | undefined;
  readonly faults: Faults;
  /** The DAVE group of the guild's voice session: epoch, members, commits accepted; undefined without DAVE. */
  daveGroup(
    guild: Guild,
  ):
    | { readonly epoch: bigint; members(): string[]; settled(): boolean; readonly stats: DaveStats }
    | undefined;
  /** A member's DAVE listener in the bot's voice session: its epoch, when it was last welcomed, joined a group. */
  daveListener(
    guild: Guild,
    member: Member,
  ): { epoch(): bigint; welcomedAt(): number | undefined; joinedGroupAt(): number | undefined } | undefined;
  /** Calls `listener` after every change the emulator makes or sees (not voice frames); returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
  close(): Promise<void>;
}

/** Commits accepted and ignored, and key packages rejected, in one DAVE group. */
export type DaveStats = DaveGroup['stats'];
