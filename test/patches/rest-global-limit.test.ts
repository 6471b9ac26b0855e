/**
 * Herald's patch of @discordjs/rest (patches/@discordjs+rest+2.6.3+001+interaction-webhooks-unbound.patch, see
 * patches/README.md): Discord binds only requests made with the bot's token to its global rate limit (50 a
 * second); an interaction's webhook (its follow-ups, the edits of its reply: discord.js sends them with
 * `auth: false`) is not bound by it. Unpatched, @discordjs/rest counted and held those too, so a burst of members
 * answered by follow-ups waited in line at 50 a second behind each other and behind every other call.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RateLimitData, REST } from '@discordjs/rest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let server: Server;
let api: string;
const received: string[] = [];

beforeEach(async () => {
  received.length = 0;
  server = createServer((request, response) => {
    received.push(`${request.method} ${request.url} ${request.headers.authorization ?? 'no token'}`);
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A REST client allowing `perSecond` requests a second globally, and the rate limits it reported. */
function client(perSecond: number): { rest: REST; limited: RateLimitData[] } {
  const rest = new REST({ api, globalRequestsPerSecond: perSecond, retries: 0 }).setToken('bot-token');
  const limited: RateLimitData[] = [];
  rest.on('rateLimited', (data) => limited.push(data));
  return { rest, limited };
}

// Snowflake-shaped ids: the route's major parameter (and so its own bucket) is taken from them.
const id = (n: number): string => `1${String(n).padStart(17, '0')}`;

describe('@discordjs/rest global rate limit (patched)', () => {
  it('does not hold or count the webhook requests of interactions (sent without the bot token)', async () => {
    const { rest, limited } = client(2);
    // Eight interactions answered by a follow-up each, at once: four times the global limit.
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        rest.post(`/webhooks/${id(1)}/interaction-token-${i}`, { auth: false, body: { content: 'hi' } }),
      ),
    );
    expect(received).toHaveLength(8);
    expect(received.every((line) => line.endsWith('no token'))).toBe(true);
    expect(limited.filter((data) => data.global)).toEqual([]);
    // Nor did they use up the bot's own allowance: its next two requests are not held either.
    await Promise.all([rest.get(`/channels/${id(2)}`), rest.get(`/channels/${id(3)}`)]);
    expect(limited.filter((data) => data.global)).toEqual([]);
  });

  it('still holds requests made with the bot token to the global limit', async () => {
    const { rest, limited } = client(2);
    await Promise.all(Array.from({ length: 3 }, (_, i) => rest.get(`/channels/${id(10 + i)}`)));
    expect(received).toHaveLength(3);
    expect(received.every((line) => line.endsWith('Bot bot-token'))).toBe(true);
    // Three requests at two a second: the third waited for the next second, and said so.
    expect(limited.filter((data) => data.global).length).toBeGreaterThan(0);
  });
});
