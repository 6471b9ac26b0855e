import { Registry } from 'prom-client';
import type { Logger } from '../log.ts';
import { type OpsServer, startOpsServer } from './server.ts';

/** `/readyz`'s sentence for shards standing by: who runs them meanwhile (hosts, pids). */
export function standingBySentence(holders: string): string {
  return `Standing by: another Herald runs these shards (${holders}); this process starts them when it stops.`;
}

/** Options of {@link startStandbyOpsServer}: the endpoint's own settings, and who runs the shards. */
export interface StandbyOpsOptions {
  readonly port: number;
  readonly host: string;
  readonly token: string | undefined;
  readonly secrets: readonly string[];
  readonly logger: Logger;
  /** Who runs the shards this process waits for (lease.ts's `describeHolder`). */
  readonly holders: string;
}

/**
 * The endpoint of a process standing by for its shards (another Herald holds their leases), until it runs them:
 * `/healthz` answers 200 (alive, standing by), `/readyz` 503 with who runs the shards, `/metrics` nothing yet, and
 * there is no status page (the budget and voices are the running Herald's). Closed when the shards are free, and the
 * process's own endpoint takes the port.
 */
export function startStandbyOpsServer(options: StandbyOpsOptions): Promise<OpsServer> {
  const detail = standingBySentence(options.holders);
  return startOpsServer({
    port: options.port,
    host: options.host,
    token: options.token,
    registry: new Registry(),
    readiness: async () => ({ ready: false, standingBy: true, detail }),
    health: () => ({ standingBy: true, detail }),
    status: undefined,
    secrets: options.secrets,
    logger: options.logger,
  });
}
