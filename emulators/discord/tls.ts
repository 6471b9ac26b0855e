import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';

/** A certificate and key for the voice server, trusted by this process. */
export interface TestCertificate {
  readonly cert: string;
  readonly key: string;
}

// The CA defaults are process-wide, so one certificate per process is enough and avoids piling up trusted CAs.
let pending: Promise<TestCertificate> | undefined;

/**
 * Generates (once per process) a self-signed certificate for 127.0.0.1/localhost with the `openssl` CLI and adds
 * it to this process's default CA list, so `wss://127.0.0.1:P` opened by @discordjs/voice is trusted.
 * @throws when `openssl` is missing or fails.
 */
export function trustedTestCertificate(): Promise<TestCertificate> {
  pending ??= generate().catch((error: unknown) => {
    pending = undefined;
    throw error;
  });
  return pending;
}

async function generate(): Promise<TestCertificate> {
  const dir = await mkdtemp(join(tmpdir(), 'discord-emulator-tls-'));
  try {
    const keyPath = join(dir, 'key.pem');
    const certPath = join(dir, 'cert.pem');
    await promisify(execFile)('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ]);
    const [cert, key] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
    // Node 24: the bot runs in this process, so trusting the CA here replaces NODE_EXTRA_CA_CERTS.
    tls.setDefaultCACertificates([...tls.getCACertificates('default'), cert]);
    return { cert, key };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
