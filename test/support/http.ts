import { request } from 'node:http';

/** The status a server on `url` answers to `GET /` sent to its address but naming another `Host` (DNS rebinding). */
export function statusForHost(url: string, hostName: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise<number>((resolve, reject) => {
    const req = request(
      { host: hostname, port, path: '/', headers: { Host: `${hostName}:${port}` } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
