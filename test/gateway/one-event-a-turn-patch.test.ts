/**
 * The patch in patches/@discordjs+ws+1.2.3+001+one-event-a-turn.patch (see patches/README.md): the gateway's
 * messages that arrive together (a rush of interactions read from the socket at once) are handled one per turn of
 * the event loop, so a timer due between them (the audio cycle of the streams already playing, every 20 ms) runs
 * between them, not after the last. Without it, `ws` emits every message of a read in one task.
 */
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import type { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';

/** How many dispatches the loopback gateway sends in one task once the shard has identified. */
const BURST = 20;

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

/** A gateway on loopback: HELLO, then READY and BURST dispatches written in one task after IDENTIFY. */
async function burstGateway() {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  server.on('connection', (socket) => {
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 45_000 } }));
    socket.on('message', (raw) => {
      const payload = JSON.parse(String(raw)) as { op: number };
      if (payload.op !== 2) return;
      let s = 1;
      const dispatch = (t: string, d: unknown) => socket.send(JSON.stringify({ op: 0, t, s: s++, d }));
      /** An unmasked text frame (a server's), as `ws` would write it. */
      const frame = (t: string, d: unknown): Buffer => {
        const body = Buffer.from(JSON.stringify({ op: 0, t, s: s++, d }));
        const head =
          body.length < 126
            ? Buffer.from([0x81, body.length])
            : Buffer.from([0x81, 126, body.length >> 8, body.length & 0xff]);
        return Buffer.concat([head, body]);
      };
      dispatch('READY', {
        v: 10,
        session_id: 'session',
        resume_gateway_url: url,
        user: { id: '1', username: 'herald', discriminator: '0', avatar: null },
        guilds: [],
        application: { id: '1', flags: 0 },
        shard: [0, 1],
      });
      // The burst in one write, so that the shard reads it at once, as a busy process finds a rush in its socket.
      const burst = Array.from({ length: BURST }, (_, i) =>
        frame('TYPING_START', { channel_id: '2', user_id: '3', timestamp: i }),
      );
      (socket as unknown as { _socket: Socket })._socket.write(Buffer.concat(burst));
    });
  });
  return { server, url };
}

describe('@discordjs/ws patch 001: one gateway event a turn of the event loop', () => {
  it('lets a timer or an immediate due between two events of one read run between them', async () => {
    const { server, url } = await burstGateway();
    const rest = {
      get: async () => ({
        url,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 1000, reset_after: 60_000, max_concurrency: 1 },
      }),
    } as unknown as REST;
    const manager = new WebSocketManager({ token: 'token', intents: 0, rest, shardCount: 1 });
    cleanup = async () => {
      await manager.destroy();
      server.close();
    };
    // At the burst's first event, an immediate asks how many of its events were handled before it ran.
    let seen = 0;
    let seenWhenTheImmediateRan: number | undefined;
    const all = new Promise<void>((resolve) => {
      manager.on(WebSocketShardEvents.Dispatch, ({ data }) => {
        if (data.t !== 'TYPING_START') return;
        seen++;
        if (seen === 1) {
          setImmediate(() => {
            seenWhenTheImmediateRan = seen;
          });
        }
        if (seen === BURST) resolve();
      });
    });
    await manager.connect();
    await all;
    await new Promise((resolve) => setImmediate(resolve));
    // The event that asked, and the one whose turn was already queued; without the patch, all twenty.
    expect(seenWhenTheImmediateRan).toBeLessThanOrEqual(2);
  });
});
