import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.ts';
import { DEFAULT_DATABASE_TIMEOUT_MS, within } from './deadline.ts';
import { checkReadiness, describeDatabaseFailure, type ReadinessProbes } from './health.ts';
import type { StatusSource } from './state.ts';
import { DAYS_SHOWN, renderLoginPage, renderStatusPage, type StoredView } from './status-page.ts';

/** Where `/metrics` comes from: a prom-client `Registry`, or the sharding manager's sum of every shard's. */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

/** What `/readyz` answers: this process's checks, or (the sharding manager) every shard's. */
export type ReadinessSource =
  | {
      readonly probes: ReadinessProbes;
      /** Bound on the TTS readiness check. */
      readonly ttsReadyTimeoutMs?: number;
    }
  | { readonly readiness: () => Promise<{ readonly ready: boolean }> };

/** Options of {@link startOpsServer}. */
export type OpsServerOptions = ReadinessSource & {
  readonly port: number;
  readonly host: string;
  /** `METRICS_TOKEN`: when set, `/` and `/metrics` need it (bearer header or the login cookie). */
  readonly token: string | undefined;
  readonly registry: MetricsSource;
  /** What the status page shows: this process's (`statusOf(state)`), or every shard's; undefined: no status page. */
  readonly status: StatusSource | undefined;
  /** Strings never sent in any answer (the token, the key, the metrics token). */
  readonly secrets: readonly string[];
  readonly logger: Logger;
  /** More for `/healthz` to say (the sharding manager: each shard's process); it always answers 200. */
  readonly health?: () => Record<string, unknown>;
  /** Bound on every read of the database: the readiness checks, the status page's budget and ledger; default 3 s. */
  readonly databaseTimeoutMs?: number;
  readonly now?: () => number;
};

/** The running endpoint. */
export interface OpsServer {
  /** `http://host:port`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const COOKIE = 'herald_status';
const DAY_MS = 86_400_000;

/**
 * Serves `/healthz` and `/readyz` (open, for orchestrators; JSON), and `/metrics` (Prometheus text) and `/` (the
 * status page), which need `METRICS_TOKEN` when it is set: as `Authorization: Bearer …`, or through the login form
 * at `/login`, which sets an HttpOnly cookie holding an HMAC of the token (never the token itself).
 */
export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const now = options.now ?? Date.now;
  const secrets = options.secrets.filter((secret) => secret.length >= 8);
  const scrub = (text: string): string =>
    secrets.reduce((acc, secret) => acc.split(secret).join('[redacted]'), text);
  const token = options.token;
  const cookieValue =
    token === undefined ? undefined : createHmac('sha256', token).update('herald-status-v1').digest('hex');

  const authorized = (request: IncomingMessage): boolean => {
    if (token === undefined || cookieValue === undefined) return true;
    const header = request.headers.authorization;
    if (header?.startsWith('Bearer ') && sameSecret(header.slice('Bearer '.length).trim(), token))
      return true;
    const cookie = cookieOf(request.headers.cookie, COOKIE);
    return cookie !== undefined && sameSecret(cookie, cookieValue);
  };

  const send = (
    response: ServerResponse,
    status: number,
    type: string,
    body: string,
    headers: Record<string, string> = {},
  ): void => {
    const text = scrub(body);
    response.writeHead(status, {
      'content-type': type,
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...headers,
    });
    response.end(text);
  };
  const json = (response: ServerResponse, status: number, body: unknown): void =>
    send(response, status, 'application/json; charset=utf-8', `${JSON.stringify(body)}\n`);
  const unauthorized = (response: ServerResponse, wantsHtml: boolean, failed = false): void => {
    if (wantsHtml) send(response, 401, 'text/html; charset=utf-8', renderLoginPage(failed));
    else
      send(response, 401, 'text/plain; charset=utf-8', 'METRICS_TOKEN required (Authorization: Bearer …)\n', {
        'www-authenticate': 'Bearer',
      });
  };

  const databaseTimeoutMs = options.databaseTimeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS;
  // The budget and the ledger live in the database; while it fails or is silent the page says so and shows the rest.
  const readStored = async (status: StatusSource, since: number): Promise<StoredView> => {
    try {
      const [budget, ledger] = await within(databaseTimeoutMs, 'the database', () =>
        Promise.all([status.budget(), status.ledger(since)]),
      );
      return { status: 'read', budget, ledger };
    } catch (error) {
      return { status: 'unreadable', detail: describeDatabaseFailure(error) };
    }
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const method = request.method ?? 'GET';
    if (method === 'GET' && path === '/healthz') {
      json(response, 200, {
        status: 'ok',
        uptimeSeconds: Math.round(process.uptime()),
        ...options.health?.(),
      });
      return;
    }
    if (method === 'GET' && path === '/readyz') {
      const readiness =
        'readiness' in options
          ? await options.readiness()
          : await checkReadiness(options.probes, {
              ...(options.ttsReadyTimeoutMs === undefined ? {} : { ttsTimeoutMs: options.ttsReadyTimeoutMs }),
              ...(options.databaseTimeoutMs === undefined
                ? {}
                : { databaseTimeoutMs: options.databaseTimeoutMs }),
            });
      json(response, readiness.ready ? 200 : 503, readiness);
      return;
    }
    if (method === 'GET' && path === '/metrics') {
      if (!authorized(request)) return unauthorized(response, false);
      send(response, 200, options.registry.contentType, await options.registry.metrics());
      return;
    }
    const status = options.status;
    if (method === 'GET' && path === '/' && status) {
      if (!authorized(request)) return unauthorized(response, true);
      const at = now();
      const [stored, live] = await Promise.all([readStored(status, at - DAYS_SHOWN * DAY_MS), status.live()]);
      const page = renderStatusPage({ now: at, stored, ...live });
      send(response, 200, 'text/html; charset=utf-8', page, {
        'content-security-policy':
          "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'",
      });
      return;
    }
    if (method === 'POST' && path === '/login' && status) {
      const form = new URLSearchParams(await readSmallBody(request));
      const given = form.get('token') ?? '';
      if (token === undefined || cookieValue === undefined) {
        send(response, 303, 'text/plain; charset=utf-8', '', { location: '/' });
      } else if (sameSecret(given, token)) {
        send(response, 303, 'text/plain; charset=utf-8', '', {
          location: '/',
          'set-cookie': `${COOKIE}=${cookieValue}; HttpOnly; SameSite=Strict; Path=/`,
        });
      } else {
        unauthorized(response, true, true);
      }
      return;
    }
    json(response, 404, {
      error: 'not found',
      paths: [...(status ? ['/'] : []), '/metrics', '/healthz', '/readyz'],
    });
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      options.logger.error('ops endpoint failed', { err: error, path: request.url });
      if (!response.headersSent) json(response, 500, { error: 'internal error' });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  options.logger.info('ops endpoint listening', {
    url: `http://${host}:${port}`,
    protected: token !== undefined,
  });
  return {
    url: `http://${host}:${port}`,
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Constant-time equality of two secrets of any length (their SHA-256 digests are compared). */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

/** A login form is tiny; anything over 4 KiB is cut off rather than buffered. */
async function readSmallBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 4096) break;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
