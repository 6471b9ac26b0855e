import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** One REST call the bot made, as the emulator received it. */
export interface RestCall {
  readonly method: string;
  /** The route after `/api/v10`, percent-decoded (`/webhooks/1/tok/messages/@original`). */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** Parsed JSON, or `payload_json` of a multipart body (with `files` listing the uploaded parts and their bytes). */
  readonly body: unknown;
  /** Whether an `Authorization: Bot <token>` header with the right token came with it. */
  readonly authorized: boolean;
  /** The status the emulator answered. */
  status: number;
  /** `Date.now()` on arrival. */
  readonly at: number;
}

/** What a route handler answers: a status and an optional JSON body. */
export interface RestResponse {
  readonly status: number;
  readonly body?: unknown;
}

/** A route: method, a pattern over the decoded path, and a handler getting the pattern's groups. */
export interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  readonly bot?: boolean;
  handle(call: RestCall, params: readonly string[]): RestResponse | Promise<RestResponse>;
}

/** A Discord-shaped JSON error (`{ message, code }`). */
export function apiError(status: number, code: number, message: string): RestResponse {
  return { status, body: { message, code } };
}

/** Options of {@link createRestServer}. */
export interface RestServerOptions {
  readonly token: string;
  readonly routes: readonly Route[];
  /** Every call, in arrival order, before it is handled. */
  readonly record: (call: RestCall) => void;
  /** WebSocket upgrades (the gateway lives on the same port). */
  readonly onUpgrade: (request: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

/** The HTTP side of the emulator, on 127.0.0.1 and a random port. */
export interface RestServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Starts the REST server; unknown routes answer 404 `{"message":"404: Not Found","code":0}`. */
export async function createRestServer(options: RestServerOptions): Promise<RestServer> {
  const server = http.createServer((request, response) => {
    void serve(options, request, response).catch((error: unknown) => {
      send(response, { status: 500, body: { message: `emulator error: ${String(error)}`, code: 0 } });
    });
  });
  server.on('upgrade', (request, socket, head) => {
    socket.on('error', () => {});
    options.onUpgrade(request, socket, head);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function serve(
  options: RestServerOptions,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  const raw = Buffer.concat(await request.toArray());
  const path = url.pathname
    .replace(/^\/api(\/v\d+)?/, '')
    .split('/')
    .map((part) => decodeURIComponent(part))
    .join('/');
  const call: RestCall = {
    method: request.method ?? 'GET',
    path,
    query: Object.fromEntries(url.searchParams),
    body: await parseBody(raw, request.headers['content-type']),
    authorized: request.headers.authorization === `Bot ${options.token}`,
    status: 0,
    at: Date.now(),
  };
  options.record(call);
  let answer: RestResponse = apiError(404, 0, '404: Not Found');
  for (const route of options.routes) {
    const match = route.pattern.exec(path);
    if (!match || route.method !== call.method) continue;
    answer =
      route.bot && !call.authorized
        ? apiError(401, 0, '401: Unauthorized')
        : await route.handle(call, match.slice(1));
    break;
  }
  call.status = answer.status;
  send(response, answer);
}

function send(response: ServerResponse, answer: RestResponse): void {
  if (answer.body === undefined) {
    response.writeHead(answer.status).end();
    return;
  }
  const body = JSON.stringify(answer.body);
  response.writeHead(answer.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

async function parseBody(raw: Buffer, contentType: string | undefined): Promise<unknown> {
  if (raw.length === 0) return undefined;
  if (contentType?.startsWith('multipart/form-data')) {
    const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
    const payload = form.get('payload_json');
    const parsed = typeof payload === 'string' ? (JSON.parse(payload) as Record<string, unknown>) : {};
    const files = await Promise.all(
      [...form.entries()].flatMap(([name, value]) =>
        typeof value === 'string'
          ? []
          : [
              value.arrayBuffer().then((bytes) => ({
                field: name,
                filename: value.name,
                size: value.size,
                contentType: value.type,
                data: Buffer.from(bytes),
              })),
            ],
      ),
    );
    return { ...parsed, files };
  }
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
