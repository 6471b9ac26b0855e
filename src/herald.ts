import { hostname } from 'node:os';
import { generateDependencyReport } from '@discordjs/voice';
import {
  Client,
  type Guild as DiscordGuild,
  Events,
  GatewayIntentBits,
  type Interaction,
  Partials,
} from 'discord.js';
import type { Dispatcher } from 'undici';
import { commands, messageCommands } from '../commands/index.ts';
import { createVoiceAutoJoin } from './autoread/auto-join.ts';
import { createAutoReader, type LiveSession } from './autoread/reader.ts';
import { createAutoReadStore } from './autoread/settings.ts';
import {
  budgetedSynthesize,
  createBudgetAlerter,
  createBudgetGuard,
  createBudgetStore,
  createTtsProbe,
  startBudgetRechecks,
} from './budget/index.ts';
import { adoptShardCacheFolders, createAudioCache, createCacheStore } from './cache/index.ts';
import { type Config, secretsOf } from './config.ts';
import type { Deps } from './discord/command.ts';
import { contained } from './discord/contain.ts';
import { firstSightOnly } from './discord/first-sight.ts';
import { createInteractionHandler } from './discord/interactions.ts';
import { createOperatorCheck } from './discord/operators.ts';
import { describeFailure, NO_MENTIONS } from './discord/replies.ts';
import type { Logger } from './log.ts';
import { createMemberStore, tunedSynthesize } from './members/index.ts';
import { isPreview, renderPreviewFile } from './members/preview.ts';
import {
  checkReadiness,
  createOpsMetrics,
  createVoiceWatch,
  databaseProbe,
  keepRecentProblems,
  liveOf,
  logUtterances,
  noOpsEvents,
  type OpsServer,
  type OpsState,
  observeAudioCache,
  observeBudgetStore,
  observeCacheStore,
  observeGateway,
  observeGenerate,
  observeInteractionAnswers,
  type ProcessErrorKind,
  startOpsServer,
  statusOf,
  warnOfLateAudio,
} from './ops/index.ts';
import { clientShardOptions, ownsGuild, runsShard } from './shard/client.ts';
import { answerManager } from './shard/ipc.ts';
import { acquireShardLeases, claimOf, createShardLeases, keepShardLeases } from './shard/lease.ts';
import { standByFor } from './shard/standby.ts';
import { createSettingsStore, openDatabase } from './storage/index.ts';
import { createVoiceStateStore } from './storage/voice-state.ts';
import { createTtsClient, type GenerateResult, type TtsTimeouts } from './tts/index.ts';
import { createJoinQueue } from './voice/join-queue.ts';
import { VoiceManager } from './voice/manager.ts';
import { persistSnapshots, recoverSessions } from './voice/recovery.ts';
import { createVoiceMessages } from './voice-message/index.ts';

/** A running Herald. */
export interface Herald {
  readonly client: Client;
  /** The operations endpoint, when `METRICS_PORT` is set. */
  readonly ops: OpsServer | undefined;
  /** Leaves every voice channel, logs out, closes storage and the TTS client. */
  stop(): Promise<void>;
  /** Counts an error that reached the process's last-resort handlers (the entry point logs it). */
  processError(kind: ProcessErrorKind): void;
}

/** Test seams and process-level choices for {@link startHerald}. */
export interface HeraldOptions {
  readonly logger: Logger;
  /** HTTP transport for the TTS client. */
  readonly ttsDispatcher?: Dispatcher;
  /** TTS client timeouts (defaults: connect 5 s, first byte 20 s, idle gap 10 s); tests shorten them. */
  readonly ttsTimeouts?: TtsTimeouts;
  /** How long a voice join may take before Herald gives up (default 15 s); tests shorten it. */
  readonly voiceConnectTimeoutMs?: number;
  /** Bound on the TTS check of `/readyz` (default 3 s); tests shorten it. */
  readonly ttsReadyTimeoutMs?: number;
  /** How long a graceful stop lets paid audio play out (default {@link DEFAULT_SHUTDOWN_DRAIN_MS}). */
  readonly shutdownDrainMs?: number;
  /**
   * Called when another Herald took this process's shards over (it stopped renewing its lease for long enough):
   * the entry point stops this one, so that two do not answer. Logged either way.
   */
  readonly onShardsLost?: () => void;
}

/**
 * A graceful stop lets audio already paid for play out for at most this long (the entry point's hard limit on a
 * whole stop is 10 s): long enough for the sentence being heard and the one ready after it, as a rule.
 */
export const DEFAULT_SHUTDOWN_DRAIN_MS = 5_000;

/**
 * The composition root: builds every part from the config, wires them, and logs in. The only place that knows
 * how the parts fit together.
 */
export async function startHerald(config: Config, options: HeraldOptions): Promise<Herald> {
  const client = new Client({
    // MessageContent is privileged: enable it for the application in the Discord developer portal.
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildVoiceStates,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
    ],
    // Deletions and edits of messages discord.js no longer caches (a busy channel, a restart) still arrive, as
    // partials carrying only ids: a message queued for reading must be withdrawn or re-read all the same.
    partials: [Partials.Message],
    allowedMentions: NO_MENTIONS,
    ...(config.discord.restUrl ? { rest: { api: config.discord.restUrl } } : {}),
    // Explicit, so that discord.js never picks SHARD_COUNT up from the environment on its own.
    ...clientShardOptions(config.shards),
  });
  const owns = (guildId: string): boolean => ownsGuild(client.options, guildId);
  // Every line carries the shard; a sharding manager passes each process its shard ids. The latest warnings and
  // errors are also kept for the status page.
  const problems = keepRecentProblems(options.logger.child({ shard: shardLabel(client.options.shards) }), {
    secrets: secretsOf(config),
  });
  const { logger } = problems;
  // The operations view reads the parts below when it is asked (a scrape, a page), so it may be built first.
  const opsState: OpsState = {
    budget: () => budget.status(),
    sessions: () => watch.views(client),
    gatewayConnected: () => gateway.connected(),
    ledger: (since) => budgetStore.ledger({ since }),
    recentProblems: problems.recent,
    cache: () => ({ entries: audioCache.entries, bytes: audioCache.bytes }),
  };
  const metrics = config.ops.port === undefined ? undefined : createOpsMetrics(opsState);
  // Audio that came slower than it plays is also said in the log and so on the status page (sessions are watched
  // only with the endpoint on, below).
  const events = warnOfLateAudio(metrics?.events ?? noOpsEvents, logger.child({ component: 'voice' }));
  const gateway = observeGateway(client, events);
  observeInteractionAnswers(client, events);
  const watch = createVoiceWatch(events);
  logger.debug('voice dependencies', { report: generateDependencyReport() });

  // One database for every store: a SQLite file, or PostgreSQL shared with Herald's other processes.
  const db = openDatabase(config.database);
  // One process per shard: a second Herald on these shards (a second npm start, overlapping SHARD_IDS) waits here
  // until they are free, before it reconciles the budget's reservations or connects to anything.
  const shardLogger = logger.child({ component: 'shards' });
  const leases = await createShardLeases(db, {
    ...claimOf(config.shards),
    host: hostname(),
    pid: process.pid,
  });
  // Standing by: a managed shard tells its manager, which waits for it and says why; a process of its own serves
  // /healthz and /readyz meanwhile (its full endpoint needs what it builds once it runs).
  const standby = standByFor(config, shardLogger);
  await acquireShardLeases(leases, { logger: shardLogger, onWaiting: standby.begin });
  await standby.end();
  const stopKeepingLeases = keepShardLeases(leases, {
    logger: shardLogger,
    onLost: () => options.onShardsLost?.(),
  });
  const settings = await createSettingsStore(db);
  const autoread = await createAutoReadStore(db);
  const budgetStore = observeBudgetStore(await createBudgetStore(db), events);
  const voiceState = await createVoiceStateStore(db);
  const cacheStore = await createCacheStore(db);
  const members = await createMemberStore(db);
  const tts = createTtsClient({
    ...config.tts,
    logger: logger.child({ component: 'tts' }),
    ...(options.ttsDispatcher ? { dispatcher: options.ttsDispatcher } : {}),
    ...(options.ttsTimeouts ? { timeouts: options.ttsTimeouts } : {}),
  });
  const budgetLogger = logger.child({ component: 'budget' });
  const budget = await createBudgetGuard({
    store: budgetStore,
    floorUsd: config.budget.floorUsd,
    warnUsd: config.budget.warnUsd,
    pricePerCharUsd: config.budget.pricePerCharUsd,
    memberCharsPerMinute: config.budget.memberCharsPerMinute,
    // The same after a restart (the host and its shards, not the pid): what a killed run left reserved is
    // reconciled at once. Two live processes must not share it; a sharding manager gives each its own shards.
    owner: `${hostname()}#${shardLabel(client.options.shards)}`,
    logger: budgetLogger,
    onAlert: createBudgetAlerter({
      store: budgetStore,
      alertChannelId: config.budget.alertChannelId,
      logger: budgetLogger,
      send: async (channelId, content) => {
        const channel = await client.channels.fetch(channelId);
        if (!channel?.isSendable()) throw new Error(`Herald cannot post in channel ${channelId}.`);
        await channel.send({ content, allowedMentions: NO_MENTIONS });
      },
    }),
  });
  // One process on the machine's cache folder: what shard processes kept there in folders of their own is its now.
  if (!config.shards.managed && config.cache.maxBytes > 0) {
    await adoptShardCacheFolders(config.cache.dir, logger.child({ component: 'cache' }));
  }
  const audioCache = await createAudioCache({
    config: config.cache,
    service: { baseUrl: config.tts.baseUrl, form: config.tts.form },
    store: observeCacheStore(cacheStore, events),
    estimateUsd: (characters) => budget.estimateUsd(characters),
    // A preview is a fixed sentence, not a member's speech: cached even where a server turned caching off.
    alwaysCache: isPreview,
    logger: logger.child({ component: 'cache' }),
    observer: observeAudioCache(events),
  });
  const voiceLogger = logger.child({ component: 'voice' });
  const budgeted = budgetedSynthesize(
    budget,
    observeGenerate(
      (request, signal) =>
        tts.generate({
          text: request.text,
          speakerId: request.speaker.id,
          ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
          signal,
        }),
      events,
    ),
  );
  // Outermost first: the member's temperature, then the cache (a hit stops here), then the guard and the service.
  const synthesize = tunedSynthesize(audioCache.wrap(budgeted.synthesize), {
    store: members,
    form: config.tts.form,
  });
  const unplayed = (result: GenerateResult, reason: string): void =>
    budgeted.unplayed(audioCache.paidResultOf(result), reason);
  const voice = new VoiceManager({
    logger: voiceLogger,
    idleTimeoutMs: config.idleTimeoutMs,
    pauseMs: config.utterancePauseMs,
    framesPerPacket: config.framesPerPacket,
    ...(options.voiceConnectTimeoutMs === undefined
      ? {}
      : { connectTimeoutMs: options.voiceConnectTimeoutMs }),
    limits: config.queueLimits,
    // Each server's voice channel and queue, kept so a restart rejoins and finishes it.
    onSnapshot: persistSnapshots(voiceState, logger.child({ component: 'voice' })),
    synthesize: logUtterances(synthesize, voiceLogger),
    // One gateway connection (shard), so one join queue: Discord's command rate is per shard.
    joinQueue: createJoinQueue(),
    // A cache hit was never paid for; a first play through the cache is the guard's own result behind the tee.
    onUnplayed: (result, _request, reason) => unplayed(result, reason),
    // Sessions are watched only when someone can look: with the endpoint off, voice runs exactly as without it.
    ...(metrics ? { observer: watch.observer } : {}),
  });
  const budgetProbe = createTtsProbe(tts);
  const deps: Deps = {
    tts,
    settings,
    voice,
    autoread,
    logger,
    defaultSpeaker: config.tts.defaultSpeaker,
    estimateCostUsd: (characters) => budget.estimateUsd(characters),
    budget,
    budgetProbe,
    isOperator: createOperatorCheck(
      config.budget.ownerIds,
      () => client.application?.fetch() ?? Promise.reject(new Error('not logged in yet')),
      logger,
    ),
    budgetAlertChannelId: config.budget.alertChannelId,
    cache: cacheStore,
    cacheEnabled: audioCache.enabled,
    cacheMaxChars: config.cache.maxChars,
    members,
    ttsForm: config.tts.form,
    renderPreviewFile: (request, guildId) => renderPreviewFile(synthesize, request, guildId),
    voiceMessages: createVoiceMessages({ synthesize, unplayed }),
    userInstall: config.userInstall,
  };

  /** Joins a voice channel by id for auto-join; the session, or undefined when Herald cannot join it. */
  const joinById = (guildId: string, voiceChannelId: string, announceId: string): LiveSession | undefined => {
    const guild = client.guilds.cache.get(guildId);
    const channel = guild?.channels.cache.get(voiceChannelId);
    if (!channel?.isVoiceBased()) return undefined;
    const announce = guild?.channels.cache.get(announceId);
    const outcome = voice.join(channel, announce?.isSendable() ? announce : undefined);
    return outcome.kind === 'joined' || outcome.kind === 'already-here' ? outcome.session : undefined;
  };
  const voiceAutoJoin = createVoiceAutoJoin({
    store: autoread,
    voice,
    join: (guildId, channelId) => joinById(guildId, channelId, channelId),
    logger: logger.child({ component: 'autoread' }),
  });

  const reader = createAutoReader({
    store: autoread,
    // The same sessions, with auto-read's utterances marked so the metrics tell them from /speak.
    voice: watch.autoread(voice),
    settings,
    tts,
    defaultSpeaker: config.tts.defaultSpeaker,
    logger: logger.child({ component: 'autoread' }),
    join: joinById,
    members,
    notify: (channelId, error) => {
      const channel = client.channels.cache.get(channelId);
      if (!channel?.isSendable()) return;
      const content = `Auto-read could not speak a message: ${describeFailure(error, logger)}`;
      channel.send({ content, allowedMentions: NO_MENTIONS }).catch((sendError: unknown) => {
        logger.warn('could not post an auto-read notice', { err: sendError });
      });
    },
  });

  // A gateway replay can deliver an interaction twice: the second is not run (nor paid for) again. (discord.js
  // itself drops a replayed message it still has in its cache.)
  const onInteraction = firstSightOnly(
    (interaction: Interaction) => interaction.id,
    createInteractionHandler(commands, deps, messageCommands),
    (interaction) =>
      logger.warn('ignored an interaction Discord delivered twice', {
        id: interaction.id,
        guild: interaction.guildId,
      }),
  );
  // Every handler is contained: an exception in one server's event is logged with that server, never fatal.
  client.on(
    Events.InteractionCreate,
    contained(logger, 'interaction', (interaction) => interaction.guildId, onInteraction),
  );
  client.on(
    Events.VoiceStateUpdate,
    contained(
      logger,
      'voice state',
      (_old, state) => state.guild.id,
      (oldState, newState) => {
        voice.onVoiceStateUpdate(oldState, newState);
        // Auto-join catches and logs its own failures; the promise never rejects.
        void voiceAutoJoin.onVoiceMove({
          guildId: newState.guild.id,
          bot: newState.member?.user.bot ?? newState.id === client.user?.id,
          oldChannelId: oldState.channelId,
          newChannelId: newState.channelId,
        });
      },
    ),
  );
  client.on(
    Events.ChannelDelete,
    contained(
      logger,
      'channel delete',
      (channel) => (channel.isDMBased() ? null : channel.guildId),
      (channel) => {
        if (!channel.isDMBased()) voice.onChannelDelete(channel.id, channel.guildId);
      },
    ),
  );
  // Herald's permissions change with its roles, a role's permissions, or a channel's overwrites.
  const onPermissions = contained(
    logger,
    'permissions change',
    (guild: DiscordGuild) => guild.id,
    (guild: DiscordGuild) => voice.onPermissionsChange(guild),
  );
  client.on(Events.GuildRoleUpdate, (_old, role) => onPermissions(role.guild));
  client.on(Events.ChannelUpdate, (_old, channel) => {
    if (!channel.isDMBased()) onPermissions(channel.guild);
  });
  client.on(Events.GuildMemberUpdate, (_old, member) => {
    if (member.id === client.user?.id) onPermissions(member.guild);
  });
  client.on(
    Events.MessageCreate,
    contained(logger, 'message', (message) => message.guildId, reader.onMessageCreate),
  );
  client.on(
    Events.MessageDelete,
    contained(
      logger,
      'message delete',
      (message) => message.guildId,
      (message) => {
        reader.onMessageDelete(message);
        // Not in voice there yet (a restart restoring its queue): remembered, so the restored queue skips it.
        if (message.guildId && !voice.get(message.guildId)) voice.withdraw(message.guildId, message.id);
      },
    ),
  );
  client.on(
    Events.MessageUpdate,
    contained(
      logger,
      'message update',
      (_old, message) => message.guildId,
      async (_old, message) => {
        // Discord sends an edit's whole message; a partial one (no content known) changes nothing to say.
        if (!message.partial) await reader.onMessageUpdate(message);
      },
    ),
  );
  client.on(
    Events.MessageBulkDelete,
    contained(
      logger,
      'bulk delete',
      (messages) => messages.first()?.guildId,
      (messages) => {
        for (const message of messages.values()) reader.onMessageDelete(message);
      },
    ),
  );
  client.on(
    Events.GuildDelete,
    contained(
      logger,
      'guild delete',
      (guild) => guild.id,
      (guild) => voice.onGuildDelete(guild.id),
    ),
  );
  client.on(Events.Error, (error) => logger.error('discord client error', { err: error }));
  client.on(Events.Warn, (message) => logger.warn('discord client warning', { message }));
  // Once the caches are filled: rejoin the voice channels Herald was in before a restart, and finish their queues.
  client.once(Events.ClientReady, (ready) => {
    recoverSessions({
      store: voiceState,
      voice,
      client: ready,
      speakers: () => tts.speakers(),
      owns,
      logger: logger.child({ component: 'voice' }),
    }).catch((error: unknown) => logger.error('resuming voice sessions failed', { err: error }));
  });
  client.once(Events.ClientReady, (ready) =>
    logger.info('logged in', { user: ready.user.tag, guilds: ready.guilds.cache.size }),
  );

  const probes = {
    gatewayConnected: () => gateway.connected(),
    database: databaseProbe(db, config.database),
    tts: (signal: AbortSignal) => tts.listSpeakers({ signal }),
    budget: () => budget.status(),
  };
  const ttsTimeout =
    options.ttsReadyTimeoutMs === undefined ? {} : { ttsTimeoutMs: options.ttsReadyTimeoutMs };
  // Up before the login, so /healthz answers while the gateway connects (and /readyz says it is not yet ready).
  // A shard spawned by the sharding manager serves no port: the manager asks it and answers for every shard.
  const ops =
    metrics && config.ops.port !== undefined && !config.shards.managed
      ? await startOpsServer({
          port: config.ops.port,
          host: config.ops.host,
          token: config.ops.token,
          registry: metrics.registry,
          status: statusOf(opsState),
          readiness: () => checkReadiness(probes, ttsTimeout),
          secrets: secretsOf(config),
          logger: logger.child({ component: 'ops' }),
        })
      : undefined;
  const stopAnswering =
    metrics && config.shards.managed
      ? answerManager(
          {
            metrics: () => metrics.registry.getMetricsAsJSON(),
            readiness: () => checkReadiness(probes, ttsTimeout),
            status: async () => liveOf(opsState),
          },
          logger,
        )
      : () => {};

  // A synchronous tts.speakers() warm-up would delay start-up; the first command fills the cache instead.
  await client.login(config.discord.token);
  // The stop lives in the shared database, so one process re-checking is enough: the one running shard 0 (exactly
  // one per deployment: its lease, respawned by its manager). While it restarts a resume is only late by as long,
  // and `/budget recheck` works on every shard.
  const stopRechecks = runsShard(client.options, 0)
    ? startBudgetRechecks({
        guard: budget,
        probe: budgetProbe,
        intervalMs: config.budget.recheckIntervalMs,
        logger: budgetLogger,
      })
    : () => {};

  return {
    client,
    ops,
    processError: (kind) => events.processError(kind),
    async stop() {
      stopRechecks();
      stopAnswering();
      // A deploy does not cut a sentence: what is already paid for is heard (bounded), the rest is saved.
      await voice.drainAll(options.shutdownDrainMs ?? DEFAULT_SHUTDOWN_DRAIN_MS);
      await ops?.close();
      voice.destroyAll();
      await client.destroy();
      await tts.close();
      // Off the gateway first: a process waiting for these shards may start now.
      stopKeepingLeases();
      await leases
        .release()
        .catch((error: unknown) => shardLogger.warn('could not release the shard lease', { err: error }));
      await db.close();
    },
  };
}

/** The shard(s) this process runs, for log lines: `0` when unsharded. */
function shardLabel(shards: number | readonly number[] | 'auto' | undefined): string {
  if (typeof shards === 'number') return String(shards);
  if (Array.isArray(shards)) return shards.join(',');
  return '0';
}
