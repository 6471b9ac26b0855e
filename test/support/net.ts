import type { AddressInfo, Socket } from 'node:net';
import { createServer } from 'node:net';

/** A loopback port nothing listens on now: bound, then released (free for a server, closed for a client). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
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
