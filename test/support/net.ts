import type { AddressInfo } from 'node:net';
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
