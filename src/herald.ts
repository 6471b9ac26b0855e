import { generateDependencyReport } from '@discordjs/voice';
import { Client, Events, GatewayIntentBits } from 'discord.js';
import type { Dispatcher } from 'undici';
import { commands } from '../commands/index.ts';
import { createAutoReader } from './autoread/reader.ts';
import { createAutoReadStore } from './autoread/settings.ts';
import {
  budgetedSynthesize,
  createBudgetAlerter,
  createBudgetGuard,
  createBudgetStore,
  createTtsProbe,
  startBudgetRechecks,
} from './budget/index.ts';
import type { Deps } from './command.ts';
import type { Config } from './config.ts';
import { createInteractionHandler } from './interactions.ts';
import type { Logger } from './log.ts';
import { createOperatorCheck } from './operators.ts';
import { describeFailure, NO_MENTIONS } from './replies.ts';
import { createSettingsStore, openDatabase } from './storage/index.ts';
import { createTtsClient, type TtsTimeouts } from './tts/index.ts';
import { VoiceManager } from './voice/manager.ts';

/** A running Herald. */
export interface Herald {
  readonly client: Client;
  /** Leaves every voice channel, logs out, closes storage and the TTS client. */
  stop(): Promise<void>;
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
}

/**
 * The composition root: builds every part from the config, wires them, and logs in. The only place that knows
 * how the parts fit together.
 */
export async function startHerald(config: Config, options: HeraldOptions): Promise<Herald> {
  const { logger } = options;
  logger.debug('voice dependencies', { report: generateDependencyReport() });

  // One database for every store: a SQLite file, or PostgreSQL shared with Herald's other processes.
  const db = openDatabase(config.database);
  const settings = await createSettingsStore(db);
  const autoread = await createAutoReadStore(db);
  const budgetStore = await createBudgetStore(db);
  const tts = createTtsClient({
    ...config.tts,
    logger: logger.child({ component: 'tts' }),
    ...(options.ttsDispatcher ? { dispatcher: options.ttsDispatcher } : {}),
    ...(options.ttsTimeouts ? { timeouts: options.ttsTimeouts } : {}),
  });
  const client = new Client({
    // MessageContent is privileged: enable it for the application in the Discord developer portal.
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildVoiceStates,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
    ],
    allowedMentions: NO_MENTIONS,
    ...(config.discord.restUrl ? { rest: { api: config.discord.restUrl } } : {}),
  });
  const budgetLogger = logger.child({ component: 'budget' });
  const budget = await createBudgetGuard({
    store: budgetStore,
    floorUsd: config.budget.floorUsd,
    warnUsd: config.budget.warnUsd,
    pricePerCharUsd: config.budget.pricePerCharUsd,
    memberCharsPerMinute: config.budget.memberCharsPerMinute,
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
  const budgeted = budgetedSynthesize(budget, (request, signal) =>
    tts.generate({ text: request.text, speakerId: request.speaker.id, signal }),
  );
  const voice = new VoiceManager({
    logger: logger.child({ component: 'voice' }),
    idleTimeoutMs: config.idleTimeoutMs,
    ...(options.voiceConnectTimeoutMs === undefined
      ? {}
      : { connectTimeoutMs: options.voiceConnectTimeoutMs }),
    limits: config.queueLimits,
    synthesize: budgeted.synthesize,
    onUnplayed: (result, _request, reason) => budgeted.unplayed(result, reason),
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
  };

  const reader = createAutoReader({
    store: autoread,
    voice,
    settings,
    tts,
    defaultSpeaker: config.tts.defaultSpeaker,
    logger: logger.child({ component: 'autoread' }),
    notify: (channelId, error) => {
      const channel = client.channels.cache.get(channelId);
      if (!channel?.isSendable()) return;
      const content = `Auto-read could not speak a message: ${describeFailure(error, logger)}`;
      channel.send({ content, allowedMentions: NO_MENTIONS }).catch((sendError: unknown) => {
        logger.warn('could not post an auto-read notice', { err: sendError });
      });
    },
  });

  const onInteraction = createInteractionHandler(commands, deps);
  client.on(Events.InteractionCreate, (interaction) => void onInteraction(interaction));
  client.on(Events.VoiceStateUpdate, (oldState, newState) => voice.onVoiceStateUpdate(oldState, newState));
  client.on(Events.ChannelDelete, (channel) => {
    if (!channel.isDMBased()) voice.onChannelDelete(channel.id, channel.guildId);
  });
  client.on(Events.MessageCreate, (message) => void reader.onMessageCreate(message));
  client.on(Events.MessageDelete, (message) => reader.onMessageDelete(message));
  client.on(Events.MessageBulkDelete, (messages) => {
    for (const message of messages.values()) reader.onMessageDelete(message);
  });
  client.on(Events.GuildDelete, (guild) => voice.onGuildDelete(guild.id));
  client.on(Events.Error, (error) => logger.error('discord client error', { err: error }));
  client.on(Events.Warn, (message) => logger.warn('discord client warning', { message }));
  client.once(Events.ClientReady, (ready) =>
    logger.info('logged in', { user: ready.user.tag, guilds: ready.guilds.cache.size }),
  );

  // A synchronous tts.speakers() warm-up would delay start-up; the first command fills the cache instead.
  await client.login(config.discord.token);
  const stopRechecks = startBudgetRechecks({
    guard: budget,
    probe: budgetProbe,
    intervalMs: config.budget.recheckIntervalMs,
    logger: budgetLogger,
  });

  return {
    client,
    async stop() {
      stopRechecks();
      voice.destroyAll();
      await client.destroy();
      await tts.close();
      await db.close();
    },
  };
}
