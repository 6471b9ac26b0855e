import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BadRequest, listenForPage, type PageServer } from '../../sandbox/http.ts';
import { silentLogger } from '../../src/log.ts';

// The page's door on loopback: the static page, JSON actions, the WebSocket, and what it refuses.

let server: PageServer;
const sockets: string[] = [];
beforeAll(async () => {
  server = await listenForPage({
    host: '127.0.0.1',
    port: 0,
    logger: silentLogger,
    actions: {
      echo: (body) => ({ got: body }),
      refuse: () => {
        throw new BadRequest('no such member');
      },
      fail: () => {
        throw new Error('broken');
      },
    },
    onSocket: (socket) => {
      sockets.push('open');
      socket.send('hello');
    },
  });
});
afterAll(() => server?.close());

const post = (action: string, body: string, type = 'application/json') =>
  fetch(new URL(`/api/${action}`, server.url), { method: 'POST', headers: { 'Content-Type': type }, body });

describe('the page server', () => {
  it('serves the page, its script and its style, and nothing else from disk', async () => {
    for (const [path, type] of [
      ['/', 'text/html'],
      ['/app.js', 'text/javascript'],
      ['/style.css', 'text/css'],
    ] as const) {
      const response = await fetch(new URL(path, server.url));
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain(type);
    }
    expect((await fetch(new URL('/../server.ts', server.url))).status).toBe(404);
    expect((await fetch(new URL('/index.html', server.url))).status).toBe(404);
  });

  it('answers JSON actions: 200 with the result, 400 for a refusal or bad JSON, 500 for a failure, 405 for others', async () => {
    const ok = await post('echo', '{"a":1}');
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ got: { a: 1 } });
    const refused = await post('refuse', '{}');
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: 'no such member' });
    expect((await post('echo', '{nope')).status).toBe(400);
    expect((await post('echo', '[1]')).status).toBe(400);
    expect((await post('echo', JSON.stringify({ big: 'x'.repeat(70_000) }))).status).toBe(400);
    expect((await post('fail', '{}')).status).toBe(500);
    expect((await post('echo', 'a=1', 'application/x-www-form-urlencoded')).status).toBe(405);
    expect((await fetch(new URL('/api/echo', server.url))).status).toBe(405);
    expect((await post('nothing', '{}')).status).toBe(404);
  });

  it('refuses a request for another host name (DNS rebinding)', async () => {
    const { port } = new URL(server.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/', headers: { Host: `evil.example:${port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });

  it('opens the WebSocket for its own page only', async () => {
    const url = `${server.url.replace('http', 'ws')}ws`;
    const own = new WebSocket(url, { origin: server.url.slice(0, -1) });
    const [first] = await new Promise<[string]>((resolve, reject) => {
      own.once('message', (data) => resolve([String(data)]));
      own.once('error', reject);
    });
    expect(first).toBe('hello');
    own.close();
    const foreign = new WebSocket(url, { origin: 'https://evil.example' });
    await expect(
      new Promise((resolve, reject) => {
        foreign.once('open', resolve);
        foreign.once('error', reject);
      }),
    ).rejects.toThrow();
    expect(sockets).toEqual(['open']);
  });
});
