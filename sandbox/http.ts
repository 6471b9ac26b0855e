/**
 * The page's door: one HTTP port on loopback serving the static page, a JSON API (`POST /api/<action>`) and one
 * WebSocket (`/ws`). Requests not addressed to this server by name are refused: another site open in the same
 * browser could otherwise reach it (DNS rebinding), and with a real TTS key set the sandbox spends money.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '../src/log.ts';

/** A refusal of the page's request (400), as opposed to a failure of the sandbox (500). */
export class BadRequest extends Error {}

/** One API action: the request's JSON object in, a JSON-able answer out. @throws BadRequest for bad input. */
export type Action = (body: Record<string, unknown>) => unknown;

/** Options of {@link listenForPage}. */
export interface PageServerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly actions: Readonly<Record<string, Action>>;
  /** A page connected its WebSocket. */
  onSocket(socket: WebSocket): void;
  readonly logger: Logger;
}

/** The listening page server. */
export interface PageServer {
  /** e.g. http://127.0.0.1:3000/ */
  readonly url: string;
  close(): Promise<void>;
}

const PAGE_DIR = join(import.meta.dirname, 'page');
const STATIC: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};
const MAX_BODY_BYTES = 65_536;

/** Listens on `host:port`. @throws when the port is taken or the host cannot be bound. */
export async function listenForPage(options: PageServerOptions): Promise<PageServer> {
  const allowedHosts = new Set<string>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!allowedHosts.has(req.headers.host ?? '')) {
      res.writeHead(403).end('wrong Host');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
    const file = STATIC[url.pathname];
    if (req.method === 'GET' && file) {
      const body = await readFile(join(PAGE_DIR, file.file));
      res.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-store' }).end(body);
      return;
    }
    const action = url.pathname.startsWith('/api/') ? options.actions[url.pathname.slice(5)] : undefined;
    if (!action) {
      res.writeHead(404).end('not found');
      return;
    }
    // Browsers send a cross-site JSON post only after a preflight this server never answers.
    if (req.method !== 'POST' || !req.headers['content-type']?.startsWith('application/json')) {
      res.writeHead(405).end('POST JSON');
      return;
    }
    const result = await action(await readJson(req));
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(result ?? {}));
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof BadRequest ? 400 : 500;
      if (status === 500) options.logger.error('sandbox request failed', { err: error });
      if (!res.headersSent) res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
    });
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const origin = req.headers.origin;
    const sameOrigin = origin === undefined || allowedHosts.has(hostOf(origin));
    if (req.url !== '/ws' || !allowedHosts.has(req.headers.host ?? '') || !sameOrigin) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => options.onSocket(ws));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  for (const name of [shownHost, 'localhost', '127.0.0.1']) allowedHosts.add(`${name}:${port}`);
  return {
    url: `http://${shownHost}:${port}/`,
    async close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function hostOf(origin: string): string {
  try {
    return new URL(origin).host;
  } catch {
    return '';
  }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BadRequest('body too large');
    chunks.push(chunk as Buffer);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  } catch {
    throw new BadRequest('body is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new BadRequest('body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}
