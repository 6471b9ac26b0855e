import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { cachedSynthesize, type DiskCache, type Entry, openDiskCache } from '../../src/cache/index.ts';
import { silentLogger } from '../../src/log.ts';
import type { GenerateResult, Speaker } from '../../src/tts/index.ts';
import type { SpeechRequest, Synthesize } from '../../src/voice/session.ts';

// Two disk caches on one folder stand for two shard processes of one machine: the locks are files, so the claims
// and the bound work between them as between processes (a live owner is this very pid).

const SPEAKER: Speaker = { id: 's1', name: 'Bella', voiceKey: 'b', gender: null, languages: null };
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
});
const folder = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-cache-shared-'));
  dirs.push(dir);
  return dir;
};
const open = (dir: string, maxBytes = 1e7): Promise<DiskCache> =>
  openDiskCache({ dir, maxBytes, maxAgeMs: 86_400_000, logger: silentLogger });
const speech = (text: string): SpeechRequest => ({
  text,
  speaker: SPEAKER,
  requestedBy: { id: 'm1', name: 'm1' },
  onFailure: () => {},
});
const entry = (bytes: number): Entry => ({
  audio: Buffer.alloc(bytes, 7),
  meta: {
    format: 'opus',
    contentType: 'audio/ogg',
    sampleRate: 48_000,
    durationS: 1,
    characters: 3,
    costUsd: 0.001,
    createdAt: Date.now(),
  },
});

/** A paid synthesis whose streams the test ends by hand. */
function fakeService() {
  const calls: PassThrough[] = [];
  const paid: Synthesize = async () => {
    const audio = new PassThrough();
    calls.push(audio);
    return {
      audio,
      contentType: 'audio/ogg',
      format: 'opus',
      sampleRate: 48_000,
      durationS: 1,
      costUsd: 0.002,
      balanceUsd: 9,
      requestId: `r${calls.length}`,
      attempts: 1,
    } satisfies GenerateResult;
  };
  return { paid, calls };
}
const wrap = (paid: Synthesize, disk: DiskCache): Synthesize =>
  cachedSynthesize(paid, {
    disk,
    store: { guildEnabled: async () => true, recordHit: async () => {} },
    keyOf: (request) => Buffer.from(request.text).toString('hex'),
    maxChars: 200,
    estimateUsd: () => undefined,
    logger: silentLogger,
  });
function collect(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('one cache folder shared by the processes of a machine', () => {
  it('pays once when two processes ask for the same sentence at the same moment', async () => {
    const dir = folder();
    const service = fakeService();
    const [a, b] = [wrap(service.paid, await open(dir)), wrap(service.paid, await open(dir))];
    const signal = new AbortController().signal;
    const first = a(speech('gg'), signal, 'g1');
    const second = b(speech('gg'), signal, 'g2');
    await until(() => service.calls.length === 1);
    service.calls[0]?.end(Buffer.from('the whole clip'));
    const [heardA, heardB] = await Promise.all([
      first.then((r) => collect(r.audio)),
      second.then((r) => collect(r.audio)),
    ]);
    expect(heardA.toString()).toBe('the whole clip');
    expect(heardB.toString()).toBe('the whole clip');
    expect(service.calls).toHaveLength(1);
    expect(readdirSync(dir).filter((name) => name.endsWith('.lock'))).toEqual([]);
  });

  it('pays again in the other process when the first one’s audio failed', async () => {
    const dir = folder();
    const service = fakeService();
    const [a, b] = [wrap(service.paid, await open(dir)), wrap(service.paid, await open(dir))];
    const signal = new AbortController().signal;
    const first = await a(speech('gg'), signal, 'g1');
    first.audio.on('error', () => {});
    const second = b(speech('gg'), signal, 'g2');
    await until(() => service.calls.length === 1);
    service.calls[0]?.destroy(new Error('reset'));
    await until(() => service.calls.length === 2);
    service.calls[1]?.end(Buffer.from('whole'));
    expect((await collect((await second).audio)).toString()).toBe('whole');
  });

  it('breaks the claim of a process that died holding it', async () => {
    const dir = folder();
    const key = Buffer.from('gg').toString('hex');
    // A pid no process has: the kernel's pid_max is below 2^22 on Linux.
    writeFileSync(join(dir, `${key}.lock`), JSON.stringify({ pid: 2 ** 22 + 1, host: hostname() }));
    const service = fakeService();
    const synthesize = wrap(service.paid, await open(dir));
    const result = synthesize(speech('gg'), new AbortController().signal, 'g1');
    await until(() => service.calls.length === 1);
    service.calls[0]?.end(Buffer.from('whole'));
    expect((await collect((await result).audio)).toString()).toBe('whole');
    // The entry is stored under the broken claim, and every lock is given back.
    await until(() => {
      const names = readdirSync(dir);
      return names.includes(`${key}.hac`) && !names.some((name) => name.endsWith('.lock'));
    });
  });

  it('bounds the folder once: a store in one process evicts what another stored', async () => {
    const dir = folder();
    const [a, b] = [await open(dir, 2_500), await open(dir, 2_500)];
    expect(await a.put('one', entry(1_000))).toBe('stored');
    expect(await b.put('two', entry(1_000))).toBe('stored');
    // Each sees the whole folder: two entries, not one each.
    expect(b.size).toBe(2);
    expect(await a.put('three', entry(1_000))).toBe('stored');
    const files = readdirSync(dir).filter((name) => name.endsWith('.hac'));
    expect(files.sort()).toEqual(['three.hac', 'two.hac']);
    expect(a.size).toBe(2);
    // The other process finds an entry it never stored, and forgets one evicted under it.
    expect((await b.get('three')).kind).toBe('hit');
    expect((await b.get('one')).kind).toBe('miss');
    expect(b.size).toBe(2);
  });
});
