import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './net.ts';

/** A throwaway PostgreSQL cluster, or why there is none. */
export type PostgresServer =
  | {
      readonly kind: 'running';
      readonly url: string;
      /** Stops the server and removes its data. */
      stop(): Promise<void>;
      /** Stops the server (fast shutdown: every client is cut off) and keeps its data, as an outage would. */
      halt(): Promise<void>;
      /** Starts a halted server again on the same port and data; resolves once it accepts connections. */
      resume(): Promise<void>;
    }
  | { readonly kind: 'missing'; readonly reason: string };

/** Debian's server binaries: /usr/lib/postgresql/<version>/bin, newest version first. */
function findBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/**
 * Starts a cluster in a temporary directory on a free loopback port: `initdb` and `postgres` run as the
 * unprivileged `postgres` user when this process is root (initdb refuses root), trust authentication, no fsync.
 * Resolves `missing` when PostgreSQL is not installed; rejects when it is and could not start.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = findBinDir();
  if (!bin) {
    return {
      kind: 'missing',
      reason:
        'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; Debian: apt-get install postgresql)',
    };
  }
  const root = process.getuid?.() === 0;
  // util-linux puts runuser in /usr/sbin, which a root shell's PATH does not always hold.
  const runuser = existsSync('/usr/sbin/runuser') ? '/usr/sbin/runuser' : 'runuser';
  const as = (command: string, args: string[]): [string, string[]] =>
    root ? [runuser, ['-u', 'postgres', '--', command, ...args]] : [command, args];
  const dir = mkdtempSync(join(tmpdir(), 'herald-pg-'));
  if (root) {
    const ids = execFileSync('id', ['-u', 'postgres']).toString().trim();
    const gid = execFileSync('id', ['-g', 'postgres']).toString().trim();
    chownSync(dir, Number(ids), Number(gid));
  }
  const data = join(dir, 'data');
  const [initCommand, initArgs] = as(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '-A',
    'trust',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  execFileSync(initCommand, initArgs, { stdio: 'pipe' });
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;

  /** The postmaster now running, and its exit. */
  let current: { readonly server: ChildProcess; readonly exited: Promise<void>; log(): string } | undefined;
  const launch = (): void => {
    const [command, args] = as(join(bin, 'postgres'), [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-h',
      '127.0.0.1',
      '-F',
      '-c',
      'max_connections=200',
    ]);
    const server: ChildProcess = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    server.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
    current = { server, exited, log: () => log };
  };
  const halt = async (): Promise<void> => {
    if (!current) return;
    const { server, exited } = current;
    if (server.exitCode === null) {
      // SIGINT is PostgreSQL's fast shutdown. It goes to the postmaster itself: runuser blocks SIGINT and would
      // turn a SIGTERM into a smart shutdown that waits for every client.
      const pidFile = join(data, 'postmaster.pid');
      const postmaster = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0;
      if (Number.isInteger(postmaster) && postmaster > 0) process.kill(postmaster, 'SIGINT');
      else server.kill('SIGTERM');
    }
    await exited;
    current = undefined;
  };
  const stop = async (): Promise<void> => {
    await halt();
    rmSync(dir, { recursive: true, force: true });
  };
  // Ready when it accepts a connection; a server that exits first says why in its log.
  const ready = async (): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      if (!current || current.server.exitCode !== null) {
        throw new Error(`PostgreSQL exited at start:\n${current?.log() ?? ''}`);
      }
      const client = new pg.Client({ connectionString: url });
      try {
        await client.connect();
        await client.end();
        return;
      } catch (error) {
        await client.end().catch(() => {});
        if (attempt > 150)
          throw new Error(`PostgreSQL did not accept connections: ${String(error)}\n${current.log()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };
  const resume = async (): Promise<void> => {
    if (current) return;
    launch();
    await ready();
  };
  try {
    await resume();
  } catch (error) {
    await stop();
    throw error;
  }
  return { kind: 'running', url, stop, halt, resume };
}

/** Creates an empty database on the cluster at `adminUrl` and returns its URL. */
export async function createDatabase(adminUrl: string): Promise<string> {
  const name = `herald_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
