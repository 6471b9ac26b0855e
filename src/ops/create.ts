import type { Client } from 'discord.js';
import type { BudgetStatus } from '../budget/index.ts';
import { type Config, secretsOf } from '../config.ts';
import type { Logger } from '../log.ts';
import { answerManager } from '../shard/ipc.ts';
import type { Database } from '../storage/database.ts';
import { noOpsEvents, type OpsEvents } from './events.ts';
import { checkReadiness, databaseProbe } from './health.ts';
import { warnOfLateAudio } from './late-audio.ts';
import { createOpsMetrics, type OpsMetrics } from './metrics.ts';
import { createVoiceWatch, observeGateway, observeInteractionAnswers, type VoiceWatch } from './observe.ts';
import { type OpsServer, startOpsServer } from './server.ts';
import { liveOf, type OpsState, statusOf } from './state.ts';

/** How Herald is watched, from {@link createObservation}. */
export interface Observation {
  /** The metrics, when the endpoint is on (`METRICS_PORT`). */
  readonly metrics: OpsMetrics | undefined;
  /** Where the parts report; the metrics when on, else nothing but the late-audio warnings. */
  readonly events: OpsEvents;
  /** Whether the gateway connection is ready. */
  readonly gateway: { connected(): boolean };
  /** The voice sessions as the metrics and the status page see them. */
  readonly watch: VoiceWatch;
}

/**
 * Starts watching the client. `state` is read only when someone asks (a scrape, a page), so it may name parts built
 * after this. Audio that came slower than it plays is also said in the log, and so on the status page.
 */
export function createObservation(
  client: Client,
  state: OpsState,
  options: { readonly endpoint: boolean; readonly logger: Logger },
): Observation {
  const metrics = options.endpoint ? createOpsMetrics(state) : undefined;
  const events = warnOfLateAudio(
    metrics?.events ?? noOpsEvents,
    options.logger.child({ component: 'voice' }),
  );
  const gateway = observeGateway(client, events);
  observeInteractionAnswers(client, events);
  return { metrics, events, gateway, watch: createVoiceWatch(events) };
}

/** The operations endpoint, or the answers to a sharding manager, from {@link startOperations}. */
export interface Operations {
  /** The endpoint, when this process serves one. */
  readonly server: OpsServer | undefined;
  /** Stops answering the sharding manager (nothing for a process of its own). */
  stopAnswering(): void;
  /** Closes the endpoint, if any. */
  close(): Promise<void>;
}

/** What {@link startOperations} reads from. */
export interface OperationsParts {
  readonly config: Config;
  readonly observation: Observation;
  readonly state: OpsState;
  readonly db: Database;
  /** A free call to the TTS service (listing voices), for `/readyz`. */
  readonly listSpeakers: (signal: AbortSignal) => Promise<unknown>;
  readonly budget: () => BudgetStatus | Promise<BudgetStatus>;
  /** Bound on the TTS check of `/readyz` (default 3 s). */
  readonly ttsReadyTimeoutMs: number | undefined;
  readonly logger: Logger;
}

/**
 * Serves `/metrics`, `/healthz`, `/readyz` and the status page when `METRICS_PORT` is set. A shard spawned by the
 * sharding manager serves no port: the manager asks it and answers for every shard. Started before the login, so
 * /healthz answers while the gateway connects (and /readyz says it is not ready yet).
 */
export async function startOperations(parts: OperationsParts): Promise<Operations> {
  const { config, observation, state, logger } = parts;
  const { metrics } = observation;
  const probes = {
    gatewayConnected: () => observation.gateway.connected(),
    database: databaseProbe(parts.db, config.database),
    tts: parts.listSpeakers,
    budget: parts.budget,
  };
  const timeouts = parts.ttsReadyTimeoutMs === undefined ? {} : { ttsTimeoutMs: parts.ttsReadyTimeoutMs };
  const server =
    metrics && config.ops.port !== undefined && !config.shards.managed
      ? await startOpsServer({
          port: config.ops.port,
          host: config.ops.host,
          token: config.ops.token,
          registry: metrics.registry,
          status: statusOf(state),
          readiness: () => checkReadiness(probes, timeouts),
          secrets: secretsOf(config),
          logger: logger.child({ component: 'ops' }),
        })
      : undefined;
  const stopAnswering =
    metrics && config.shards.managed
      ? answerManager(
          {
            metrics: () => metrics.registry.getMetricsAsJSON(),
            readiness: () => checkReadiness(probes, timeouts),
            status: async () => liveOf(state),
          },
          logger,
        )
      : () => {};
  return { server, stopAnswering, close: async () => server?.close() };
}
