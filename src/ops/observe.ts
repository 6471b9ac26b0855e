import { performance } from 'node:perf_hooks';
import {
  type AudioPlayerState,
  AudioPlayerStatus,
  type AudioResource,
  type VoiceConnectionState,
  VoiceConnectionStatus,
} from '@discordjs/voice';
import { type Client, Events, RESTEvents, SnowflakeUtil, Status } from 'discord.js';
import { opusPacketMs } from '../audio/opus-packet.ts';
import type { LiveSession } from '../autoread/reader.ts';
import {
  type AccountState,
  BudgetRefusedError,
  type BudgetStore,
  type GuildSynthesize,
} from '../budget/index.ts';
import type { CacheObserver, CacheStore } from '../cache/index.ts';
import type { Logger } from '../log.ts';
import type { GenerateResult } from '../tts/index.ts';
import type { GuildSession, SpeechRequest } from '../voice/session.ts';
import type { OpsEvents, UtteranceSource } from './events.ts';
import type { SessionView } from './state.ts';

// Observers: each wraps or listens to one part through its public surface and reports OpsEvents, so the parts
// themselves know nothing of metrics. The composition root applies them.

/**
 * A budget store whose ledger writes and stops are reported: the charged figures are the ledger's by construction.
 * Writes inside {@link BudgetStore.locked} are reported once their transaction commits (a rolled-back one is not).
 */
export function observeBudgetStore(store: BudgetStore, events: OpsEvents): BudgetStore {
  // Whether spending was stopped, as last seen; the stored state at start, so a stop already in place is not
  // reported again.
  const initial = store.account().then(
    (state) => state.blockedSince !== null,
    () => false,
  );
  let blocked: boolean | undefined;
  const noteStop = async (state: AccountState): Promise<void> => {
    const before = blocked ?? (await initial);
    const now = state.blockedSince !== null;
    if (now && !before) events.budgetStopped(state.blockedReason ?? 'floor-reached');
    blocked = now;
  };
  return {
    ...store,
    async saveAccount(state) {
      await store.saveAccount(state);
      await noteStop(state);
    },
    async locked(work) {
      const committed: (() => Promise<void> | void)[] = [];
      const result = await store.locked((tx) =>
        work({
          ...tx,
          async saveAccount(state) {
            await tx.saveAccount(state);
            committed.push(() => noteStop(state));
          },
          async recordGeneration(entry, reservationId) {
            const id = await tx.recordGeneration(entry, reservationId);
            // Spend is the reported cost, or the reservation's estimate when the service sent none (as the
            // ledger's); a settlement already recorded is not charged again.
            if (id !== undefined) {
              committed.push(() =>
                events.charged(entry.characters, entry.costUsd ?? entry.estimatedCostUsd ?? 0),
              );
            }
            return id;
          },
        }),
      );
      for (const note of committed) await note();
      return result;
    },
  };
}

/**
 * A cache store whose recorded hits are reported as saved, once written: the saved figures are the cache ledger's
 * by construction (a hit whose row could not be written is counted as a lookup, not as saved).
 */
export function observeCacheStore(store: CacheStore, events: OpsEvents): CacheStore {
  return {
    ...store,
    async recordHit(hit) {
      await store.recordHit(hit);
      events.cacheSaved(hit.characters, hit.savedUsd);
    },
  };
}

/** The audio cache's lookups and evictions, reported. */
export function observeAudioCache(events: OpsEvents): CacheObserver {
  return {
    lookup: (kind) => events.cacheLookup(kind),
    evicted: (entries) => events.cacheEvicted(entries),
  };
}

/** A generation whose first-byte time and failures are reported. */
export function observeGenerate<A extends unknown[]>(
  generate: (...args: A) => Promise<GenerateResult>,
  events: OpsEvents,
): (...args: A) => Promise<GenerateResult> {
  return async (...args) => {
    const started = performance.now();
    try {
      const result = await generate(...args);
      events.ttsFirstByte((performance.now() - started) / 1000);
      return result;
    } catch (error) {
      const code = (error as { code?: unknown } | undefined)?.code;
      // An abort is a skip or a stop, not a failure of the service.
      if (code !== 'TTS_ABORTED') events.ttsError(typeof code === 'string' ? code : 'OTHER');
      throw error;
    }
  };
}

/** Counts gateway reconnects and tells whether every shard is ready. */
export function observeGateway(client: Client, events: OpsEvents): { connected(): boolean } {
  client.on(Events.ShardReconnecting, () => events.gatewayReconnect());
  return {
    connected: () =>
      client.ws.shards.size > 0 && client.ws.shards.every((shard) => shard.status === Status.Ready),
  };
}

// The first answer to an interaction: POST /interactions/{id}/{token}/callback. The token never leaves this match.
const INTERACTION_CALLBACK = /^\/interactions\/(\d{17,20})\/[^/]+\/callback$/;

/**
 * Reports how Discord took each first answer to an interaction, and how long after the interaction's creation:
 * from the REST client's responses, so commands and the interaction handler know nothing of it. An answer refused
 * with 404 came too late (Discord forgets an interaction not answered within three seconds). The time is this
 * host's clock against Discord's (the id's timestamp): a skewed clock shifts it.
 */
export function observeInteractionAnswers(client: Client, events: OpsEvents): void {
  client.rest.on(RESTEvents.Response, (request, response) => {
    const id = INTERACTION_CALLBACK.exec(request.path)?.[1];
    if (id === undefined) return;
    const seconds = (Date.now() - SnowflakeUtil.timestampFrom(id)) / 1000;
    events.interactionAnswered(
      response.ok ? 'accepted' : response.status === 404 ? 'expired' : 'refused',
      seconds,
    );
  });
}

/**
 * Reports each frame the player asks `resource` for and does not get while its audio has not ended: the player then
 * sends a frame of silence in its place (@discordjs/voice's AudioPlayer), which the members hear as a gap; and each
 * gap once, at its first such frame.
 */
function watchStarving(resource: AudioResource, events: OpsEvents): void {
  const read = resource.read.bind(resource);
  let starving = false;
  resource.read = () => {
    const packet = read();
    if (packet === null && !resource.ended) {
      if (!starving) events.voiceGap();
      starving = true;
      events.voiceStarved();
    } else {
      starving = false;
    }
    return packet;
  };
}

/** Voice close code 4017: the voice server requires the DAVE protocol, which the connection did not speak. */
const DAVE_CLOSE_CODES: ReadonlySet<number> = new Set([4017]);
/**
 * A packet sent this long after the previous one of the same utterance had played out is late (a whole frame
 * behind): 40 ms after a packet of 20 ms, 80 after one of 60 (the session sends up to three frames a packet).
 */
const LATE_PACKET_MS = 20;

interface Tracked {
  readonly source: UtteranceSource;
  readonly queuedAt: number;
  ended: boolean;
}

/** Follows voice sessions for the metrics and the status page; see {@link createVoiceWatch}. */
export interface VoiceWatch {
  /** Marks a request as coming from auto-read (before it is queued); everything else counts as `/speak`. */
  markAutoread(request: SpeechRequest): void;
  /** The VoiceManager's observer: a session started or ended. */
  readonly observer: {
    started(session: GuildSession): void;
    ended(session: GuildSession): void;
  };
  /** The sessions auto-read speaks on, with its utterances marked (see {@link markAutoread}). */
  autoread(voice: { get(guildId: string): GuildSession | undefined }): {
    get(guildId: string): LiveSession | undefined;
  };
  /** Live sessions as the status page shows them, named from the client's caches. */
  views(client: Client): SessionView[];
}

/**
 * Watches each voice session from outside, through its public objects: its `enqueue` (to time and classify each
 * utterance), its audio player (a new resource starting) and its voice connection (each packet dispatched, DAVE
 * transitions, closes and errors). The first packet of an utterance is the first one the connection actually
 * dispatched after the player started that utterance's resource.
 */
export function createVoiceWatch(events: OpsEvents): VoiceWatch {
  const autoread = new WeakSet<SpeechRequest>();
  const tracked = new WeakMap<SpeechRequest, Tracked>();
  const live = new Set<GuildSession>();

  const started = (session: GuildSession): void => {
    // A join that failed at once has already ended (and been reported ended) inside the constructor.
    if (!session.ended) live.add(session);
    let awaitingFirst: Tracked | undefined;
    let lastResource: unknown;
    let lastPacketAt: number | undefined;

    const enqueue = session.enqueue.bind(session);
    session.enqueue = (request) => {
      const entry: Tracked = {
        source: autoread.has(request) ? 'autoread' : 'speak',
        queuedAt: performance.now(),
        ended: false,
      };
      const observed: SpeechRequest = {
        ...request,
        onFailure: (error) => {
          if (!entry.ended) {
            entry.ended = true;
            events.utteranceEnded(entry.source, error instanceof BudgetRefusedError ? 'refused' : 'failed');
          }
          request.onFailure(error);
        },
      };
      tracked.set(observed, entry);
      const outcome = enqueue(observed);
      if (outcome.kind === 'queued') events.utteranceQueued(entry.source);
      else {
        // A full queue refuses the utterance before anything is paid.
        entry.ended = true;
        events.utteranceEnded(entry.source, 'refused');
      }
      return outcome;
    };

    session.player.on('stateChange', (_old: AudioPlayerState, next: AudioPlayerState) => {
      if (next.status !== AudioPlayerStatus.Playing || next.resource === lastResource) return;
      lastResource = next.resource;
      lastPacketAt = undefined;
      watchStarving(next.resource, events);
      // The session gives each resource its utterance as metadata; an unknown shape is simply not timed.
      const utterance = next.resource.metadata as { request?: SpeechRequest; slowStart?: boolean } | null;
      if (utterance?.slowStart === true) events.voiceSlowStart();
      const request = utterance?.request;
      awaitingFirst = request === undefined ? undefined : tracked.get(request);
    });

    const connection = session.connection;
    // How long the packet prepared for the next dispatch plays, and the one dispatched last.
    let preparedMs = 20;
    let lastPacketMs = 20;
    const prepare = connection.prepareAudioPacket.bind(connection);
    connection.prepareAudioPacket = (packet) => {
      preparedMs = opusPacketMs(packet);
      return prepare(packet);
    };
    const dispatch = connection.dispatchAudio.bind(connection);
    connection.dispatchAudio = () => {
      const sent = dispatch();
      if (sent) {
        const now = performance.now();
        events.voicePacket(lastPacketAt !== undefined && now - lastPacketAt > lastPacketMs + LATE_PACKET_MS);
        lastPacketAt = now;
        lastPacketMs = preparedMs;
        if (awaitingFirst && !awaitingFirst.ended) {
          awaitingFirst.ended = true;
          events.firstPacket(awaitingFirst.source, (now - awaitingFirst.queuedAt) / 1000);
          events.utteranceEnded(awaitingFirst.source, 'spoken');
        }
        awaitingFirst = undefined;
      }
      return sent;
    };
    connection.on('transitioned', () => events.daveTransition());
    connection.on('stateChange', (_old: VoiceConnectionState, next: VoiceConnectionState) => {
      if (
        next.status === VoiceConnectionStatus.Disconnected &&
        'closeCode' in next &&
        DAVE_CLOSE_CODES.has(next.closeCode)
      ) {
        events.daveFailure('close');
      }
    });
    connection.on('error', (error) => {
      if (/\b(dave|mls|e2ee)\b|decrypt/i.test(error.message)) events.daveFailure('error');
    });
  };

  return {
    markAutoread: (request) => autoread.add(request),
    observer: { started, ended: (session) => live.delete(session) },
    autoread: (voice) => ({
      get: (guildId) => {
        const session = voice.get(guildId);
        if (!session) return undefined;
        return {
          get channelId() {
            return session.channelId;
          },
          enqueue: (request) => {
            autoread.add(request);
            return session.enqueue(request);
          },
          withdraw: (key) => session.withdraw(key),
          replace: (request) => {
            autoread.add(request);
            return session.replace(request);
          },
        };
      },
    }),
    views: (client) =>
      [...live].map((session) => {
        const channel = client.channels.cache.get(session.channelId ?? '');
        return {
          guildId: session.guildId,
          guildName: client.guilds.cache.get(session.guildId)?.name ?? session.guildId,
          channelName: channel && 'name' in channel ? (channel.name ?? '') : '',
          queueDepth: session.pending,
          connection: session.connection.state.status,
          player: session.player.state.status,
        };
      }),
  };
}

/**
 * Gives every synthesis an utterance id and logs its course on a child logger carrying the server and that id,
 * so the TTS request id, the cost and a failure of one utterance can be found together. Never logs the text.
 */
export function logUtterances(synthesize: GuildSynthesize, logger: Logger): GuildSynthesize {
  let next = 1;
  return async (request, signal, guildId) => {
    const log = logger.child({ guild: guildId, utterance: `u${next++}` });
    const started = performance.now();
    log.debug('utterance synthesis started', { characters: [...request.text].length });
    try {
      const result = await synthesize(request, signal, guildId);
      log.debug('utterance audio arriving', {
        requestId: result.requestId,
        costUsd: result.costUsd,
        ms: Math.round(performance.now() - started),
      });
      return result;
    } catch (error) {
      log.debug('utterance synthesis failed', { err: error, ms: Math.round(performance.now() - started) });
      throw error;
    }
  };
}
