import { hostname } from 'node:os';
import { generateDependencyReport } from '@discordjs/voice';
import type { Client } from 'discord.js';
import type { Dispatcher } from 'undici';
import { commands, messageCommands } from '../commands/index.ts';
import { createAutoRead } from './autoread/create.ts';
import { createBudget } from './budget/index.ts';
import { type Config, secretsOf } from './config.ts';
import { createDiscordClient, postInChannel, shardLabel } from './discord/client.ts';
import { listenToDiscord } from './discord/events.ts';
import { createInteractionHandler } from './discord/interactions.ts';
import { operatorsOf } from './discord/operators.ts';
import { createGatewaySessions } from './gateway/index.ts';
import type { Logger } from './log.ts';
import { renderPreviewFile } from './members/preview.ts';
import {
  createObservation,
  keepRecentProblems,
  logUtterances,
  type OpsServer,
  type OpsState,
  observeBudgetStore,
  type ProcessErrorKind,
  startOperations,
} from './ops/index.ts';
import { createPrivacy, type PrivacyOptions } from './privacy/index.ts';
import { createAnswering } from './rush/index.ts';
import { claimShards } from './shard/claim.ts';
import { runsShard } from './shard/client.ts';
import { createSpeech } from './speech/index.ts';
import { openDatabase } from './storage/index.ts';
import { openStores } from './storage/stores.ts';
import { createTtsClient, type TtsTimeouts } from './tts/index.ts';
import { createVoice, recoverWhenReady } from './voice/create.ts';
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
  /** The clock of data retention and how often it is checked (default: hourly); tests move and shorten them. */
  readonly privacy?: Pick<PrivacyOptions, 'now' | 'sweepIntervalMs'>;
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
 * The composition root: builds every part from the config, in the order they depend on each other, wires them,
 * and logs in. The only place that knows how the parts fit together.
 */
export async function startHerald(config: Config, options: HeraldOptions): Promise<Herald> {
  // Storage: one database (a SQLite file, or PostgreSQL shared with Herald's other processes), held for these shards.
  const db = openDatabase(config.database);
  // Each shard's gateway session is kept in the database: a restart RESUMEs it rather than waiting to IDENTIFY.
  const gateway = createGatewaySessions();
  const client = createDiscordClient(config, {
    identify: { db, logger: options.logger.child({ component: 'identify' }) },
    sessions: gateway.wsOptions,
  });
  // Every line carries the shard. The latest warnings and errors are also kept for the status page.
  const problems = keepRecentProblems(options.logger.child({ shard: shardLabel(client) }), {
    secrets: secretsOf(config),
  });
  const { logger } = problems;
  const child = (component: string): Logger => logger.child({ component });

  // Operations: what they read is asked for when someone looks (a scrape, a page), so they are built first.
  const opsState: OpsState = {
    budget: () => budget.guard.status(),
    sessions: () => watch.views(client),
    gatewayConnected: () => observation.gateway.connected(),
    ledger: (since) => stores.budget.ledger({ since }),
    recentProblems: problems.recent,
    cache: () => ({ entries: audioCache.entries, bytes: audioCache.bytes }),
  };
  const observation = createObservation(client, opsState, {
    endpoint: config.ops.port !== undefined,
    logger,
  });
  const { events, watch } = observation;
  logger.debug('voice dependencies', { report: generateDependencyReport() });

  const shards = await claimShards(db, config, {
    logger: child('shards'),
    onLost: () => options.onShardsLost?.(),
  });
  const stores = await openStores(db);
  // What is kept about removed servers and about members who ask, and its deletion (after every store's tables).
  const privacy = await createPrivacy(db, { ...config.privacy, ...options.privacy, logger });

  // The paid path: the TTS service, behind the budget guard, behind the audio cache (see src/speech/).
  const tts = createTtsClient({
    ...config.tts,
    logger: child('tts'),
    ...(options.ttsDispatcher ? { dispatcher: options.ttsDispatcher } : {}),
    ...(options.ttsTimeouts ? { timeouts: options.ttsTimeouts } : {}),
  });
  const budget = await createBudget({
    config: config.budget,
    store: observeBudgetStore(stores.budget, events),
    tts,
    // The host and its shards, the same after a restart; a sharding manager gives each process its own shards.
    owner: `${hostname()}#${shardLabel(client)}`,
    post: (channelId, content) => postInChannel(client, channelId, content),
    logger: child('budget'),
  });
  const { synthesize, unplayed, audioCache } = await createSpeech({
    config,
    tts,
    guard: budget.guard,
    cacheStore: stores.cache,
    members: stores.members,
    events,
    logger: child('cache'),
  });

  // Voice: each server's session, queue and connection; in a rush, answers go before starts (issue 44).
  const answering = createAnswering();
  const voiceLogger = child('voice');
  const voice = createVoice({
    config,
    synthesize: logUtterances(synthesize, voiceLogger),
    unplayed,
    store: stores.voiceState,
    // Sessions are watched only when someone can look: with the endpoint off, voice runs exactly as without it.
    observer: observation.metrics ? watch.observer : undefined,
    connectTimeoutMs: options.voiceConnectTimeoutMs,
    answering,
    logger: voiceLogger,
  });

  // Auto-read, and the commands: everything they may use, passed explicitly.
  const autoread = createAutoRead({
    client,
    voice,
    // The same sessions, with auto-read's utterances marked so the metrics tell them from /speak.
    speakOn: watch.autoread(voice),
    store: stores.autoread,
    settings: stores.settings,
    tts,
    members: stores.members,
    defaultSpeaker: config.tts.defaultSpeaker,
    logger: child('autoread'),
  });
  const interaction = createInteractionHandler(
    commands,
    {
      tts,
      settings: stores.settings,
      voice,
      autoread: stores.autoread,
      logger,
      defaultSpeaker: config.tts.defaultSpeaker,
      estimateCostUsd: (characters) => budget.guard.estimateUsd(characters),
      budget: budget.guard,
      budgetProbe: budget.probe,
      isOperator: operatorsOf(client, config.budget.ownerIds, logger),
      budgetAlertChannelId: config.budget.alertChannelId,
      cache: stores.cache,
      cacheEnabled: audioCache.enabled,
      cacheMaxChars: config.cache.maxChars,
      members: stores.members,
      ttsForm: config.tts.form,
      renderPreviewFile: (request, guildId) => renderPreviewFile(synthesize, request, guildId),
      voiceMessages: createVoiceMessages({ synthesize, unplayed }),
      userInstall: config.userInstall,
      privacy,
    },
    messageCommands,
  );
  listenToDiscord(client, { interaction: answering.around(interaction), voice, autoread, privacy, logger });
  // Once the caches are filled: rejoin the voice channels Herald was in before a restart, and finish their queues.
  const recoverShard = recoverWhenReady(client, {
    store: stores.voiceState,
    voice,
    speakers: () => tts.speakers(),
    logger: voiceLogger,
  });
  // A shard that RESUMEs after a restart gets its cache back from the database, then rejoins its voice channels.
  await gateway.start(client, db, child('gateway'), recoverShard);

  const operations = await startOperations({
    config,
    observation,
    state: opsState,
    db,
    listSpeakers: (signal) => tts.listSpeakers({ signal }),
    budget: () => budget.guard.status(),
    ttsReadyTimeoutMs: options.ttsReadyTimeoutMs,
    logger,
  });
  // A synchronous tts.speakers() warm-up would delay start-up; the first command fills the cache instead.
  await client.login(config.discord.token);
  // The stop lives in the shared database, so one process re-checking is enough: the one running shard 0 (exactly
  // one per deployment: its lease, respawned by its manager). While it restarts a resume is only late by as long,
  // and `/budget recheck` works on every shard.
  const stopRechecks = runsShard(client.options, 0) ? budget.startRechecks() : () => {};

  return {
    client,
    ops: operations.server,
    processError: (kind) => events.processError(kind),
    async stop() {
      stopRechecks();
      privacy.close();
      operations.stopAnswering();
      // A deploy does not cut a sentence: what is already paid for is heard (bounded), the rest is saved.
      await voice.drainAll(options.shutdownDrainMs ?? DEFAULT_SHUTDOWN_DRAIN_MS);
      await operations.close();
      voice.destroyAll();
      // Closed resumable (never 1000, which ends the sessions on Discord) and stored: the next start RESUMEs.
      await gateway.closeResumable();
      await client.destroy();
      await tts.close();
      // Off the gateway first: a process waiting for these shards may start now.
      await shards.release();
      await db.close();
    },
  };
}
