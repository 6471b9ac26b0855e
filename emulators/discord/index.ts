/**
 * A local Discord for end-to-end tests: REST, gateway v10, voice gateway v8 over TLS, UDP media and DAVE v1, on
 * loopback, good enough for the UNMODIFIED discord.js and @discordjs/voice. Tests drive it like users do (see
 * `startDiscordEmulator`). Facts it rests on: /work/shared/discord-protocol.md and dave-facts.md.
 *
 * This file is the one door; the parts, by protocol: `rest.ts` + `routes.ts` (REST), `gateway.ts` (gateway v10),
 * `interactions.ts` + `messages.ts` (what the bot answers), `attachments.ts` (uploads and voice messages),
 * `app-commands.ts` (message commands, user-installed interactions), `guilds.ts` + `model.ts` + `state.ts` (the world and
 * voice states), `voice.ts` + `rtp.ts` (voice gateway and UDP media), `dave-*.ts` (DAVE: MLS bytes, the
 * gateway-side group, the davey listeners), `capture.ts` (what members heard).
 *
 * Simplifications, on purpose:
 * - The bot's guild-level permissions are exactly what `setBotPermissions` (or the default) says: @everyone's
 *   are not added for the bot, so a test can take a permission away guild-wide.
 * - Shards as Discord shards (one session per shard id, each with only its guilds' events), but no identify rate
 *   limit (`session_start_limit` only counts down) and no other rate limits.
 * - A bot without Speak in its voice channel is muted as Discord mutes it: its frames reach no listener.
 * - MESSAGE_DELETE carries only ids and MESSAGE_UPDATE the whole edited message, as Discord sends them, so a bot
 *   sees deletions and edits of messages it no longer caches only with the Message partial.
 * - DAVE v1 is offered by default, as Discord requires it; `dave: false` declines it. Members are DAVE clients
 *   (davey sessions) in worker threads; `DAVE_DEBUG=1` logs the gateway's DAVE messages.
 * - A slash command that was never registered is still delivered (with a made-up id), so tests need not register.
 */
import { PermissionFlagsBits } from 'discord.js';
import { createAppCommands } from './app-commands.ts';
import { createDaveMedia } from './dave-media.ts';
import { createGateway } from './gateway.ts';
import { createGuilds, type Guilds } from './guilds.ts';
import { createInteractions } from './interactions.ts';
import { createMessages } from './messages.ts';
import { channelPermissions, INTENTS, memberPayload, randomToken, snowflake, userPayload } from './model.ts';
import { createRestServer } from './rest.ts';
import { createRoutes } from './routes.ts';
import { stageRoutes } from './stage.ts';
import { type Context, createState, type MessageRecord } from './state.ts';
import { trustedTestCertificate } from './tls.ts';
import { APPLICATION_FLAGS, type DiscordEmulator, type DiscordEmulatorOptions } from './types.ts';
import { createVoiceServer } from './voice.ts';

export type { UserInstalledSlashOptions, UserInstallPlace } from './app-commands.ts';
export type { StoredFile } from './attachments.ts';
export { IS_VOICE_MESSAGE } from './attachments.ts';
export type { Heard, Hearing, VoiceCapture } from './capture.ts';
export { describeHearing, hear, hearingOf, intervalStats, silenceInsideWords } from './capture.ts';
export type { DaveEvent } from './dave-protocol.ts';
export {
  type IdentifyRecord,
  type ResumeRecord,
  type SessionView as GatewaySession,
  shardOf,
} from './gateway.ts';
export { buildHeldReader } from './held-reader.ts';
export type { RestCall } from './rest.ts';
export type { EncryptionMode } from './rtp.ts';
export type {
  Channel,
  DaveFaults,
  DaveStats,
  DiscordEmulator,
  DiscordEmulatorOptions,
  Faults,
  Guild,
  Json,
  Member,
  Reply,
  SentMessage,
} from './types.ts';
export { APPLICATION_FLAGS } from './types.ts';
export type { HeldBy, HeldSummary } from './udp-receiver.ts';
export type { CapturedFrame } from './voice.ts';

/** Starts the emulator on loopback (REST + gateway on one port, voice on a TLS port and a UDP port). */
export async function startDiscordEmulator(o: DiscordEmulatorOptions = {}): Promise<DiscordEmulator> {
  const certificate = await trustedTestCertificate();
  const applicationId = o.applicationId ?? snowflake();
  const botUser = { id: applicationId, name: o.botName ?? 'Herald', bot: true as const };
  const token =
    o.token ?? `${Buffer.from(botUser.id).toString('base64url')}.${randomToken(4)}.${randomToken(27)}`;
  const state = createState({
    botUser,
    applicationId,
    interactionResponseMs: o.interactionResponseMs ?? 3000,
    applicationOwnerId: o.applicationOwnerId,
    applicationFlags: o.applicationFlags ?? APPLICATION_FLAGS.messageContent,
  });
  let refuseGateway = false;
  const { captureOf, notify, waitFor, guildOf, memberOf, channelOf, findChannel } = state;
  const {
    voiceRequests,
    interactions,
    flags,
    messages,
    posted,
    resumedListeners,
    timers,
    listeners,
    captures,
    rest,
    commands,
  } = state;
  const interactionResponseMs = state.interactionResponseMs;

  const botMaySpeak = (guildId: string): boolean => {
    const guild = state.guilds.get(guildId);
    const channel = guild?.channels.get(guild.voice.get(botUser.id) ?? '');
    if (!guild || !channel) return true;
    return (channelPermissions(guild, state.botMember(guild), channel) & PermissionFlagsBits.Speak) !== 0n;
  };
  const daveOffered = o.dave ?? true;
  let membersDecrypt = o.membersDecrypt ?? true;
  const dave = createDaveMedia(botUser.id, daveOffered, o.onDaveEvent, o.daveListenerThreads);
  const voice = await createVoiceServer({
    dave,
    ...(o.onDaveEvent ? { onEvent: o.onDaveEvent } : {}),
    daveOffered: () => daveOffered,
    membersDecrypt: () => membersDecrypt,
    cert: certificate.cert,
    key: certificate.key,
    heartbeatIntervalMs: o.voiceHeartbeatMs ?? 13_750,
    xchacha: o.xchacha ?? true,
    ...(o.receiverNice === undefined ? {} : { receiverNice: o.receiverNice }),
    events: {
      // Without Speak in its channel the bot is muted by Discord: nobody hears its frames.
      onFrame: (guildId, frame) => {
        if (botMaySpeak(guildId)) captureOf(guildId).push(frame);
      },
      onSpeaking: (guildId, speaking) => captureOf(guildId).speaking(speaking),
      onConnectedChange: (guildId, connected) => captureOf(guildId).setConnected(connected),
    },
  });

  const gateway = createGateway({
    token,
    heartbeatIntervalMs: o.gatewayHeartbeatMs ?? 41_250,
    url: () => gatewayUrl,
    maxGuildsPerShard: o.maxGuildsPerShard ?? 2500,
    maxConcurrency: o.maxConcurrency ?? 1,
    resumeWindowMs: o.gatewayResumeWindowMs ?? 180_000,
    hooks: {
      readyPayload: (owns) => ({
        user: { ...userPayload(botUser), verified: true, mfa_enabled: false, flags: 0 },
        guilds: [...state.guilds.values()]
          .filter((g) => g.botPresent && owns(g.id))
          .map((g) => ({ id: g.id, unavailable: true })),
        application: { id: applicationId, flags: state.applicationFlags },
        private_channels: [],
        relationships: [],
        presences: [],
        guild_join_requests: [],
        geo_ordered_rtc_regions: ['local'],
        user_settings: {},
        auth: {},
      }),
      afterReady: (owns, send) => guildOps.afterReady(owns, send),
      guildCount: (owns) => [...state.guilds.values()].filter((g) => g.botPresent && owns(g.id)).length,
      onReady: () => notify(),
      onVoiceStateUpdate: (d) => guildOps.onBotVoiceState(d),
      onResumed: () => {
        for (const listener of [...resumedListeners]) listener();
        notify();
      },
    },
  });

  const ctx: Context = { ...state, gateway, voice, dave };
  const guildOps: Guilds = createGuilds(ctx);
  const messageOps = createMessages(ctx);
  const { messagePayload, snapshot } = messageOps;
  const interactionOps = createInteractions(ctx, messageOps);
  const { findCommand, buildOptions, interactionBase, run, defaultTextChannel, findButton } = interactionOps;
  const { routes } = createRoutes(ctx, messageOps, interactionOps, {
    gateway: () => gatewayUrl,
    // Discord recommends about one shard per 1000 guilds.
    shards: () =>
      o.shards ??
      Math.max(1, Math.ceil([...state.guilds.values()].filter((g) => g.botPresent).length / 1000)),
    identifies: () => gateway.identifies.length,
    maxConcurrency: o.maxConcurrency ?? 1,
  });
  const { createGuild } = guildOps;
  const appCommands = createAppCommands(ctx, messageOps, interactionOps);

  const server = await createRestServer({
    token,
    routes: [...routes, ...appCommands.routes, ...stageRoutes(ctx, guildOps.dispatchVoiceState)],
    record: (call) => {
      rest.push(call);
    },
    onUpgrade: (request, socket, head) => {
      if (new URL(request.url ?? '/', 'http://127.0.0.1').pathname === '/gateway' && !refuseGateway) {
        gateway.handleUpgrade(request, socket, head);
      } else socket.destroy();
    },
  });
  const restUrl = `http://127.0.0.1:${server.port}/api`;
  const gatewayUrl = `ws://127.0.0.1:${server.port}/gateway`;

  const emulator: DiscordEmulator = {
    restUrl,
    gatewayUrl,
    token,
    applicationId,
    botUserId: botUser.id,
    rest,
    commands,
    identifies: gateway.identifies,
    resumes: gateway.resumes,
    gatewayCounts: (shardId) => gateway.countsOf(shardId),
    gatewayHeartbeats: gateway.heartbeats,
    voiceHandshakes: voice.handshakes,
    receiverNice: voice.receiverNice,
    voiceRequests,
    get rejectedVoicePackets() {
      return voice.rejected.count;
    },
    get lostVoicePackets() {
      return voice.lost.count;
    },
    createGuild,
    untilReady: () => gateway.untilReady(),
    gatewaySessions: () => gateway.sessions(),
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
    messageCommand: appCommands.messageCommand,
    userInstalledSlash: appCommands.userInstalledSlash,
    userInstalledAutocomplete: appCommands.userInstalledAutocomplete,
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
      const readable = (gateway.intents(guild.id) & INTENTS.messageContent) !== 0 || mentionsBot;
      const authorUser = { ...userPayload(author), bot: s.bot ?? author.bot };
      const payload = {
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
      };
      // A message command on it resolves it as dispatched (with its content whatever the intents).
      appCommands.remember({ ...payload, content });
      gateway.dispatch('MESSAGE_CREATE', payload, INTENTS.guildMessages);
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
    editMessage: (message, content) => {
      const record = messages.get(message.id);
      if (!record || record.deleted || !record.author) {
        throw new Error(`discord emulator: message ${message.id} is not a member's message`);
      }
      record.content = content;
      record.editedTimestamp = new Date().toISOString();
      const readable = (gateway.intents() & INTENTS.messageContent) !== 0;
      gateway.dispatch(
        'MESSAGE_UPDATE',
        {
          id: record.id,
          channel_id: record.channelId,
          guild_id: record.guildId,
          author: userPayload(record.author),
          member: memberPayload(record.author, false),
          content: readable ? content : '',
          timestamp: record.timestamp,
          edited_timestamp: record.editedTimestamp,
          tts: false,
          mention_everyone: false,
          mentions: [],
          mention_roles: [],
          attachments: [],
          embeds: [],
          components: [],
          pinned: false,
          type: 0,
          flags: record.flags,
        },
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
    setMembersDecrypt: (on) => {
      membersDecrypt = on;
    },
    setReceiverNap: (ms) => voice.setReceiverNap(ms),
    holdVoicePackets: (reader) => voice.holdPackets(reader),
    heldVoicePackets: () => voice.heldPackets(),
    releaseVoicePackets: () => voice.releasePackets(),
    faults: {
      closeVoice: (guild, code) => {
        voice.closeSocket(guild.id, code, `Emulated close ${code}.`);
      },
      dropVoiceHeartbeats: (on) => voice.dropHeartbeats(on),
      dropGatewayHeartbeats: (on) => gateway.dropHeartbeats(on),
      reconnectGateway: (shardId) => gateway.reconnect(shardId),
      invalidateSession: (resumable, shardId) => gateway.invalidateSession(resumable, shardId),
      deliverTwice: (event) => gateway.deliverTwice(event),
      refuseVoiceJoin: (on) => {
        flags.refuseVoiceJoin = on;
      },
      delayVoiceHandshake: (ms) => voice.delayHandshake(ms),
      loseVoicePackets: (guild, share) => voice.loseUdp(guild.id, share),
      refuseGateway: (on) => {
        refuseGateway = on;
        // Op 7 makes the bot drop its connection; the refused upgrades keep it from coming back.
        if (on) gateway.reconnect();
      },
      dropMemberVoiceClient: (member, on) => dave.setClientOnline(member.id, !on),
      dave: {
        proposeUnknownUser: (guild) => dave.faults(guild.id).proposeUnknownUser(),
        malformedCommit: (guild) => dave.faults(guild.id).malformedCommit(),
        malformedWelcome: (guild) => dave.faults(guild.id).malformedWelcome(),
        invalidTransition: (guild) => dave.faults(guild.id).invalidTransition(),
        rejectNextKeyPackage: (guild) => dave.faults(guild.id).rejectNextKeyPackage(),
      },
    },
    daveGroup: (guild) => dave.group(guild.id),
    daveListener: (guild, member) => dave.listener(guild.id, member.id),
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      listeners.clear();
      for (const sink of captures.values()) sink.dispose();
      gateway.close();
      await Promise.all([server.close(), voice.close(), dave.close()]);
    },
  };
  return emulator;
}
