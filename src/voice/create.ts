import { type Client, Events } from 'discord.js';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { type Answering, createMachineLoad, createStartGate } from '../rush/index.ts';
import { ownsGuild } from '../shard/client.ts';
import { shardOfGuild } from '../shard/config.ts';
import type { VoiceStateStore } from '../storage/voice-state.ts';
import type { GenerateResult } from '../tts/index.ts';
import { createJoinQueue } from './join-queue.ts';
import { VoiceManager, type VoiceManagerOptions } from './manager.ts';
import { persistSnapshots, type RecoveryOptions, recoverSessions } from './recovery.ts';
import type { Synthesize } from './session.ts';

/** What {@link createVoice} is built from. */
export interface VoiceParts {
  readonly config: Pick<
    Config,
    'idleTimeoutMs' | 'utterancePauseMs' | 'framesPerPacket' | 'queueLimits' | 'rushScheduler'
  >;
  /** The paid path each utterance is spoken through. */
  readonly synthesize: Synthesize;
  /** Tells the ledger that audio it paid for was never heard, and why. */
  readonly unplayed: (result: GenerateResult, reason: string) => void;
  /** Where each server's voice channel and queue are kept, so a restart rejoins and finishes them. */
  readonly store: VoiceStateStore;
  /** Follows sessions for the operations view; none: voice runs exactly as without it. */
  readonly observer: VoiceManagerOptions['observer'] | undefined;
  /** How long a voice join may take before Herald gives up (default 15 s). */
  readonly connectTimeoutMs: number | undefined;
  /** The process's interactions not yet answered, which the starts of utterances let go first in a rush. */
  readonly answering: Answering;
  readonly logger: Logger;
}

/** Builds the voice manager: each server's session, queue and connection, on one gateway connection (shard). */
export function createVoice(parts: VoiceParts): VoiceManager {
  const { config, logger } = parts;
  return new VoiceManager({
    logger,
    idleTimeoutMs: config.idleTimeoutMs,
    pauseMs: config.utterancePauseMs,
    framesPerPacket: config.framesPerPacket,
    ...(parts.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: parts.connectTimeoutMs }),
    limits: config.queueLimits,
    onSnapshot: persistSnapshots(parts.store, logger),
    synthesize: parts.synthesize,
    // One gateway connection (shard), so one join queue: Discord's command rate is per shard.
    joinQueue: createJoinQueue(),
    // One event loop, one gate: every server's starts take turns so that none holds the audio cycle (issue 44).
    ...(config.rushScheduler ? { startGate: startGate(parts.answering) } : {}),
    onUnplayed: (result, _request, reason) => parts.unplayed(result, reason),
    ...(parts.observer ? { observer: parts.observer } : {}),
  });
}

/**
 * Once the client's caches are filled (`ClientReady`): rejoins the voice channels of this process's servers that
 * Herald was in before a restart, and finishes their queues. A failure is logged, never thrown. Returns the same
 * recovery for one shard, to run earlier: a shard that RESUMEd after a restart has its cache put back before
 * discord.js turns ready, and its servers are rejoined before the events it held back (the replayed messages) are
 * handled, so that those are read in voice. Each shard is recovered once.
 */
export function recoverWhenReady(
  client: Client,
  options: Omit<RecoveryOptions, 'client' | 'owns'>,
): (shardId: number) => Promise<void> {
  const recovered = new Set<number>();
  const recover = (shards: readonly number[]): Promise<void> => {
    const mine = shards.filter((id) => !recovered.has(id));
    for (const id of mine) recovered.add(id);
    if (mine.length === 0) return Promise.resolve();
    const count = client.options.shardCount ?? 1;
    return recoverSessions({
      ...options,
      // The cache is filled (READY, or a RESUME's snapshot put back), so the user is known.
      client: client as Client<true>,
      owns: (guildId) => ownsGuild(client.options, guildId) && mine.includes(shardOfGuild(guildId, count)),
    }).then(
      () => {},
      (error: unknown) => options.logger.error('resuming voice sessions failed', { err: error }),
    );
  };
  client.once(Events.ClientReady, () => {
    const { shards } = client.options;
    void recover(Array.isArray(shards) ? shards : [0]);
  });
  return (shardId) => recover([shardId]);
}

/**
 * The process's start gate: its own timers, the machine's idle time it shares with the other processes, and the
 * interactions it has to answer.
 */
function startGate(answering: Answering) {
  const machine = createMachineLoad();
  return createStartGate({ machineBusy: () => machine.busy(), answering: () => answering.pending > 0 });
}
