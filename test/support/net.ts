import type { AddressInfo, Server, Socket } from 'node:net';
import { connect, createServer } from 'node:net';

/** A loopback port nothing listens on now: bound, then released (free for a server, closed for a client). */
export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listenOnLoopback(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A loopback listener that accepts connections and never says a word, as a host that drops packets would look. */
export interface SilentServer {
  readonly port: number;
  /** Resolves once `count` connections have been accepted (and are being held). */
  accepted(count?: number): Promise<void>;
  /** Drops every held connection and stops listening. */
  close(): Promise<void>;
}

/** Starts a {@link SilentServer} on a free loopback port. */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let waiters: { count: number; resolve: () => void }[] = [];
  let total = 0;
  const server = createServer((socket) => {
    sockets.add(socket);
    total += 1;
    // Read and discard, so the client's writes never block; answer nothing.
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    for (const waiter of waiters) if (total >= waiter.count) waiter.resolve();
    waiters = waiters.filter((waiter) => total < waiter.count);
  });
  const port = await listenOnLoopback(server);
  return {
    port,
    accepted: (count = 1) =>
      total >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve })),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A TCP proxy on loopback in front of a real server that can go silent after connections were made, as a partitioned
 * or frozen host does: the client's kernel still sees an open connection, and nothing comes back.
 */
export interface FreezableProxy {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections the client has closed so far (its FIN or reset), frozen or not. */
  readonly closedByClient: number;
  /**
   * From now on nothing passes either way and no close is passed on: bytes are dropped, as a partitioned host's
   * packets are, so a connection used while frozen stays broken. Connections accepted while frozen stay silent.
   */
  freeze(): void;
  /** Forwards again, on the connections made before the freeze and on new ones; held-back closes go through. */
  thaw(): void;
  /** Drops every connection and stops listening. */
  close(): Promise<void>;
}

/** Starts a {@link FreezableProxy} to `target` on a free loopback port. */
export async function startFreezableProxy(target: { host: string; port: number }): Promise<FreezableProxy> {
  const sockets = new Set<Socket>();
  let frozen = false;
  let accepted = 0;
  let closedByClient = 0;
  // Closes that arrived while frozen: the other side hears of them on thaw, as a healed network would carry them.
  let heldBack: Socket[] = [];
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  };
  // Half-open allowed: a client's FIN must not be answered by Node on a silent host's behalf.
  const server = createServer({ allowHalfOpen: true }, (client) => {
    accepted += 1;
    track(client);
    let clientGone = false;
    const onClientGone = (): void => {
      if (clientGone) return;
      clientGone = true;
      closedByClient += 1;
    };
    client.on('end', onClientGone);
    client.on('close', onClientGone);
    if (frozen) {
      client.on('data', () => {});
      return;
    }
    const upstream = connect({ ...target, allowHalfOpen: true });
    track(upstream);
    const hangUp = (other: Socket): void => {
      if (frozen) heldBack.push(other);
      else other.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      if (!frozen) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!frozen) client.write(chunk);
    });
    client.on('end', () => hangUp(upstream));
    client.on('close', () => hangUp(upstream));
    upstream.on('end', () => hangUp(client));
    upstream.on('close', () => hangUp(client));
  });
  const port = await listenOnLoopback(server);
  return {
    port,
    get accepted() {
      return accepted;
    },
    get closedByClient() {
      return closedByClient;
    },
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
      for (const socket of heldBack) socket.destroy();
      heldBack = [];
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Listens on a free loopback port; resolves to it. */
async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return (server.address() as AddressInfo).port;
}
