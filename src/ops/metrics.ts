import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { BudgetStatus } from '../budget/index.ts';
import type { CacheLookup } from '../cache/index.ts';
import { DEFAULT_DATABASE_TIMEOUT_MS, within } from './deadline.ts';
import type {
  BudgetStopReason,
  InteractionAnswer,
  OpsEvents,
  UtteranceOutcome,
  UtteranceSource,
} from './events.ts';
import type { OpsState } from './state.ts';

/** The Prometheus registry with Herald's families, fed by {@link OpsEvents} and read from {@link OpsState}. */
export interface OpsMetrics {
  readonly registry: Registry;
  /** Where the parts report; increments the counters and histograms below. */
  readonly events: OpsEvents;
}

/** Options of {@link createOpsMetrics}. */
export interface OpsMetricsOptions {
  /** How long a scrape waits for the budget's state before leaving its gauges out; default 3 s. */
  readonly databaseTimeoutMs?: number;
}

const SOURCES: readonly UtteranceSource[] = ['speak', 'autoread'];
const OUTCOMES: readonly UtteranceOutcome[] = ['spoken', 'refused', 'failed'];
const STOP_REASONS: readonly BudgetStopReason[] = ['floor-reached', 'service-refused', 'balance-unknown'];
const CACHE_LOOKUPS: readonly CacheLookup[] = ['hit', 'miss', 'corrupt'];
const INTERACTION_ANSWERS: readonly InteractionAnswer[] = ['accepted', 'expired', 'refused'];
/** The TTS client's error codes; anything else is counted as `OTHER`, so the label stays bounded. */
export const TTS_ERROR_CODES: readonly string[] = [
  'TTS_INVALID_REQUEST',
  'TTS_AUTHENTICATION',
  'TTS_INSUFFICIENT_BALANCE',
  'TTS_UNKNOWN_SPEAKER',
  'TTS_RATE_LIMITED',
  'TTS_SERVICE',
  'TTS_TIMEOUT',
  'TTS_CONNECTION',
  'TTS_PROTOCOL',
  'OTHER',
];

/**
 * Creates the registry: process metrics (prom-client's defaults) and Herald's own. Counters with labels start at
 * zero for every label value, so each family is present from the first scrape.
 */
export function createOpsMetrics(state: OpsState, options: OpsMetricsOptions = {}): OpsMetrics {
  const databaseTimeoutMs = options.databaseTimeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const utterances = new Counter({
    name: 'herald_utterances_total',
    help: 'Utterances by source and how they ended (spoken: the first voice packet went out).',
    labelNames: ['source', 'outcome'] as const,
    registers,
  });
  const queued = new Counter({
    name: 'herald_utterances_queued_total',
    help: 'Utterances queued in a voice session, by source.',
    labelNames: ['source'] as const,
    registers,
  });
  const firstPacket = new Histogram({
    name: 'herald_first_packet_seconds',
    help: 'From an utterance being queued (a /speak or an auto-read message) to its first voice packet.',
    labelNames: ['source'] as const,
    buckets: [0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30],
    registers,
  });
  const ttsFirstByte = new Histogram({
    name: 'herald_tts_first_byte_seconds',
    help: 'From a generation request to the response headers of the TTS service.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20],
    registers,
  });
  const ttsErrors = new Counter({
    name: 'herald_tts_errors_total',
    help: 'Failed TTS calls by the client error code.',
    labelNames: ['code'] as const,
    registers,
  });
  const characters = new Counter({
    name: 'herald_characters_charged_total',
    help: 'Characters of every generation written to the budget ledger.',
    registers,
  });
  const dollars = new Counter({
    name: 'herald_dollars_charged_total',
    help: 'USD the TTS service reported charging (X-Cost-USD), as written to the ledger.',
    registers,
  });
  const stops = new Counter({
    name: 'herald_budget_stops_total',
    help: 'Times spending stopped, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  const packets = new Counter({
    name: 'herald_voice_packets_total',
    help: 'Voice packets sent.',
    registers,
  });
  const latePackets = new Counter({
    name: 'herald_voice_late_packets_total',
    help: 'Voice packets sent more than one 20 ms frame after the previous one of the same utterance.',
    registers,
  });
  const starvedFrames = new Counter({
    name: 'herald_voice_starved_frames_total',
    help: 'Frames of silence sent inside an utterance because its audio had not arrived in time (a TTS service that slows down or stalls mid-clip): a gap members hear in the words.',
    registers,
  });
  const gaps = new Counter({
    name: 'herald_voice_gaps_total',
    help: 'Times an utterance ran out of audio inside its words, however many frames of silence each lasted: the interruptions members hear. Audio that ran out is held until it can play on, so a service that slows down mid-clip makes one gap, not one every few frames.',
    registers,
  });
  const slowStarts = new Counter({
    name: 'herald_voice_slow_starts_total',
    help: 'Utterances whose audio came slower than real time, held at their start until they could play through without a gap (members waited longer for the first word; see herald_first_packet_seconds).',
    registers,
  });
  const answers = new Counter({
    name: 'herald_interaction_answers_total',
    help: 'First answers to interactions (a reply or a deferral) by how Discord took them: accepted, expired (after the three seconds Discord waits: the member saw "The application did not respond"), refused.',
    labelNames: ['outcome'] as const,
    registers,
  });
  const answerSeconds = new Histogram({
    name: 'herald_interaction_answer_seconds',
    help: "From an interaction being created (its id, on Discord's clock) to Discord accepting its first answer (on this host's clock).",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 2.5, 3],
    registers,
  });
  const reconnects = new Counter({
    name: 'herald_gateway_reconnects_total',
    help: 'Times the Discord gateway connection was lost and re-established.',
    registers,
  });
  const daveTransitions = new Counter({
    name: 'herald_dave_transitions_total',
    help: 'DAVE end-to-end encryption protocol transitions completed by voice connections.',
    registers,
  });
  const daveFailures = new Counter({
    name: 'herald_dave_failures_total',
    help: 'DAVE failures: voice closes for DAVE reasons (close) and encryption errors (error).',
    labelNames: ['kind'] as const,
    registers,
  });

  // The audio cache. Counters are summed across shards (prom-client's default aggregation for a counter).
  const cacheLookups = new Counter({
    name: 'herald_audio_cache_lookups_total',
    help: 'Utterances the audio cache may serve, by how it answered: hit (played without paying), miss (paid), corrupt (paid: its file was damaged and deleted).',
    labelNames: ['kind'] as const,
    registers,
  });
  const cacheCharacters = new Counter({
    name: 'herald_audio_cache_characters_saved_total',
    help: 'Characters of cache hits, as written to the cache ledger: not sent to the TTS service.',
    registers,
  });
  const cacheDollars = new Counter({
    name: 'herald_audio_cache_dollars_saved_total',
    help: 'USD cache hits did not spend (what the audio cost when it was generated), as written to the cache ledger.',
    registers,
  });
  const cacheEvictions = new Counter({
    name: 'herald_audio_cache_evictions_total',
    help: 'Audio cache entries evicted, least recently used first, to make room for new ones.',
    registers,
  });

  const processErrors = new Counter({
    name: 'herald_process_errors_total',
    help: 'Errors that reached the process: unhandled rejections (logged, Herald goes on) and uncaught exceptions (Herald stops, flushes and exits for a restart).',
    labelNames: ['kind'] as const,
    registers,
  });
  for (const kind of ['unhandled-rejection', 'uncaught-exception'] as const) processErrors.inc({ kind }, 0);

  for (const source of SOURCES) {
    queued.inc({ source }, 0);
    firstPacket.zero({ source });
    for (const outcome of OUTCOMES) utterances.inc({ source, outcome }, 0);
  }
  for (const code of TTS_ERROR_CODES) ttsErrors.inc({ code }, 0);
  for (const outcome of INTERACTION_ANSWERS) answers.inc({ outcome }, 0);
  for (const reason of STOP_REASONS) stops.inc({ reason }, 0);
  for (const kind of ['close', 'error'] as const) daveFailures.inc({ kind }, 0);
  for (const kind of CACHE_LOOKUPS) cacheLookups.inc({ kind }, 0);

  // Figures read at scrape time from the parts' own state, never kept twice. `aggregator` says how the sharding
  // manager combines every shard's value into one: the budget's figures come from the shared database, so each
  // shard reports the same ones (`first`); servers in voice and queues add up (`sum`).
  const gauge = (
    name: string,
    help: string,
    read: () => number | undefined | Promise<number | undefined>,
    aggregator: 'first' | 'sum' | 'min' | 'max' = 'first',
  ): void => {
    new Gauge({
      name,
      help,
      registers,
      aggregator,
      async collect() {
        const value = await read();
        // Unknown (a balance not seen yet, no warning level set): left out of the scrape, never shown as 0.
        // (`reset()` would not do: an unlabelled gauge resets to 0.)
        if (value === undefined) this.remove();
        else this.set(value);
      },
    });
  };
  // Every budget gauge comes from one read of the budget's state (the database), shared by the scrape that asked.
  // prom-client fails the whole scrape when one collect() throws, so a read that fails or does not answer in time
  // (PostgreSQL down, or silent) leaves these gauges out, and herald_budget_state_readable says so, while the rest
  // of the scrape answers as usual.
  let reading: Promise<BudgetStatus | undefined> | undefined;
  const readBudget = (): Promise<BudgetStatus | undefined> => {
    reading ??= within(databaseTimeoutMs, 'the database', () => state.budget())
      .catch(() => undefined)
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
  const budgetGauge = (
    name: string,
    help: string,
    figure: (budget: BudgetStatus) => number | undefined,
  ): void =>
    gauge(name, help, async () => {
      const budget = await readBudget();
      return budget === undefined ? undefined : figure(budget);
    });
  gauge(
    'herald_budget_state_readable',
    "1 when this scrape read the budget's state from the database; 0 when it could not (the database failed or did not answer in time), and the budget's gauges (herald_balance_usd, herald_budget_stopped and the rest) are left out of it.",
    async () => ((await readBudget()) === undefined ? 0 : 1),
    'min',
  );
  budgetGauge(
    'herald_balance_usd',
    'The account balance last reported by the TTS service.',
    (budget) => budget.balanceUsd,
  );
  budgetGauge(
    'herald_budget_floor_usd',
    'BUDGET_FLOOR_USD: spending never takes the balance below it.',
    (budget) => budget.floorUsd,
  );
  budgetGauge('herald_budget_warn_usd', 'BUDGET_WARN_USD, when set.', (budget) => budget.warnUsd);
  budgetGauge(
    'herald_budget_reservations_held',
    'Generations in flight holding a budget reservation.',
    (budget) => budget.inFlight,
  );
  budgetGauge(
    'herald_budget_reserved_usd',
    'USD set aside for generations in flight.',
    (budget) => budget.reservedUsd,
  );
  budgetGauge(
    'herald_budget_stopped',
    '1 while spending is stopped (see herald_budget_stops_total for why).',
    (budget) => (budget.status === 'blocked' ? 1 : 0),
  );
  gauge('herald_voice_sessions', 'Servers where Herald is in voice.', () => state.sessions().length, 'sum');
  gauge(
    'herald_queue_depth',
    'Utterances waiting or playing, all servers together.',
    () => state.sessions().reduce((sum, session) => sum + session.queueDepth, 0),
    'sum',
  );
  gauge(
    'herald_queue_depth_max',
    'The longest queue of any one server.',
    () => Math.max(0, ...state.sessions().map((session) => session.queueDepth)),
    'max',
  );
  // The shards of a machine share one cache folder, and each sees all of it: the largest view counts it once
  // (a sum would count it once per shard).
  gauge('herald_audio_cache_entries', 'Audio cache entries on disk.', () => state.cache().entries, 'max');
  gauge(
    'herald_audio_cache_bytes',
    'Bytes the audio cache takes on disk (files being written included).',
    () => state.cache().bytes,
    'max',
  );
  gauge(
    'herald_gateway_connected',
    '1 while the Discord gateway connection is ready (every shard of it).',
    () => (state.gatewayConnected() ? 1 : 0),
    'min',
  );

  const codeOf = (code: string): string => (TTS_ERROR_CODES.includes(code) ? code : 'OTHER');
  const events: OpsEvents = {
    utteranceQueued: (source) => queued.inc({ source }),
    utteranceEnded: (source, outcome) => utterances.inc({ source, outcome }),
    firstPacket: (source, seconds) => firstPacket.observe({ source }, seconds),
    ttsFirstByte: (seconds) => ttsFirstByte.observe(seconds),
    ttsError: (code) => ttsErrors.inc({ code: codeOf(code) }),
    charged: (chars, usd) => {
      characters.inc(chars);
      dollars.inc(usd);
    },
    budgetStopped: (reason) => stops.inc({ reason }),
    cacheLookup: (kind) => cacheLookups.inc({ kind }),
    cacheSaved: (chars, usd) => {
      cacheCharacters.inc(chars);
      cacheDollars.inc(usd);
    },
    cacheEvicted: (entries) => cacheEvictions.inc(entries),
    voicePacket: (late) => {
      packets.inc();
      if (late) latePackets.inc();
    },
    voiceStarved: () => starvedFrames.inc(),
    voiceGap: () => gaps.inc(),
    voiceSlowStart: () => slowStarts.inc(),
    interactionAnswered: (outcome, seconds) => {
      answers.inc({ outcome });
      if (outcome === 'accepted') answerSeconds.observe(Math.max(0, seconds));
    },
    gatewayReconnect: () => reconnects.inc(),
    daveTransition: () => daveTransitions.inc(),
    daveFailure: (kind) => daveFailures.inc({ kind }),
    processError: (kind) => processErrors.inc({ kind }),
  };
  return { registry, events };
}
