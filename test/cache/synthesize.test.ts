import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type CacheHit,
  type CacheLookup,
  cachedSynthesize,
  type DiskCache,
  openDiskCache,
} from '../../src/cache/index.ts';
import { silentLogger } from '../../src/log.ts';
import type { GenerateResult, Speaker } from '../../src/tts/index.ts';
import type { SpeechRequest, Synthesize } from '../../src/voice/session.ts';

const SPEAKER: Speaker = { id: 's1', name: 'Bella', voiceKey: 'b', gender: null, languages: null };
const dirs: string[] = [];
/** The cache's writes still under way: a store or a claim's release goes on after the audio ends. */
const writes = new Set<Promise<unknown>>();
function track<T>(write: Promise<T>): Promise<T> {
  writes.add(write);
  write.then(
    () => writes.delete(write),
    () => writes.delete(write),
  );
  return write;
}
afterEach(async () => {
  // A folder removed while a store writes into it fails with ENOTEMPTY: wait until no write has begun for a while.
  for (let quiet = 0; quiet < 20; quiet++) {
    if (writes.size > 0) {
      await Promise.allSettled([...writes]);
      quiet = 0;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function speech(text: string, userId = 'm1'): SpeechRequest {
  return { text, speaker: SPEAKER, requestedBy: { id: userId, name: userId }, onFailure: () => {} };
}

/** A fake paid synthesis: each call gets a stream the test feeds by hand. */
function fakeService() {
  const calls: { request: SpeechRequest; audio: PassThrough }[] = [];
  const paid: Synthesize = async (request) => {
    const audio = new PassThrough();
    calls.push({ request, audio });
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

async function setup(options: { enabled?: boolean; maxChars?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'herald-cache-'));
  dirs.push(dir);
  const disk = await openDiskCache({ dir, maxBytes: 1e7, maxAgeMs: 86_400_000, logger: silentLogger });
  const { put } = disk;
  disk.put = (key, entry) => track(put(key, entry));
  const service = fakeService();
  const hits: CacheHit[] = [];
  const lookups: CacheLookup[] = [];
  const synthesize = cachedSynthesize(service.paid, {
    disk,
    store: {
      guildEnabled: async () => options.enabled ?? true,
      recordHit: async (hit) => {
        hits.push(hit);
      },
    },
    keyOf: (request) => `${request.speaker.id}:${Buffer.from(request.text).toString('hex')}`,
    maxChars: options.maxChars ?? 200,
    estimateUsd: () => undefined,
    logger: silentLogger,
    onLookup: (kind) => lookups.push(kind),
  });
  return { synthesize, service, hits, disk, dir, lookups };
}

function collect(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

async function storedOnce(disk: DiskCache): Promise<void> {
  // The file is written after the audio ends; wait for it rather than for a time.
  while (disk.size === 0) await new Promise((resolve) => setImmediate(resolve));
}

const signal = () => new AbortController().signal;

describe('cachedSynthesize', () => {
  it('pays for a sentence once, then plays it from disk with no charge', async () => {
    const { synthesize, service, hits, disk } = await setup();
    const audio = randomBytes(3_000);
    const first = await synthesize(speech('gg'), signal(), 'g1');
    service.calls[0]?.audio.end(audio);
    expect((await collect(first.audio)).equals(audio)).toBe(true);
    await storedOnce(disk);

    const second = await synthesize(speech('gg', 'm2'), signal(), 'g1');
    expect((await collect(second.audio)).equals(audio)).toBe(true);
    expect(service.calls).toHaveLength(1);
    expect(second.costUsd).toBe(0);
    expect(hits).toEqual([
      { guildId: 'g1', userId: 'm2', characters: 2, savedUsd: 0.002, at: expect.any(Number) },
    ]);
  });

  it('tells which paid result stands behind the one it returned, so the ledger can still find it', async () => {
    const { disk } = await setup();
    const service = fakeService();
    const pairs: [GenerateResult, GenerateResult][] = [];
    const wrapped = cachedSynthesize(service.paid, {
      disk,
      store: { guildEnabled: async () => true, recordHit: async () => {} },
      keyOf: () => 'k',
      maxChars: 200,
      estimateUsd: () => undefined,
      logger: silentLogger,
      onPaid: (returned, paid) => pairs.push([returned, paid]),
    });
    const result = await wrapped(speech('x'), signal(), 'g1');
    expect(pairs).toHaveLength(1);
    expect(pairs[0]?.[0]).toBe(result);
    expect(pairs[0]?.[1]).not.toBe(result);
    expect(pairs[0]?.[1].requestId).toBe(result.requestId);
    service.calls[0]?.audio.end(Buffer.from('x'));
  });

  it('streams the first play as the service sends it (the cache never holds it back)', async () => {
    const { synthesize, service } = await setup();
    const first = await synthesize(speech('hello'), signal(), 'g1');
    const firstChunk = new Promise<Buffer>((resolve) => first.audio.once('data', resolve));
    service.calls[0]?.audio.write(Buffer.from('first'));
    // The service has not finished, yet the listener already has its first bytes.
    expect((await firstChunk).toString()).toBe('first');
    service.calls[0]?.audio.end(Buffer.from('rest'));
  });

  it('pays once for twenty concurrent identical requests; all twenty get the whole audio', async () => {
    const { synthesize, service, hits } = await setup();
    const audio = randomBytes(10_000);
    const pending = Array.from({ length: 20 }, (_, i) => synthesize(speech('brb', `m${i}`), signal(), 'g1'));
    // The others wait for the leader's whole audio (never a half of it), so the leader's stream is fed first.
    const [leader, ...others] = pending;
    const leaderBody = leader?.then((result) => collect(result.audio));
    while (service.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
    service.calls[0]?.audio.end(audio);
    const bodies = [
      await leaderBody,
      ...(await Promise.all(others.map(async (result) => collect((await result).audio)))),
    ];
    expect(service.calls).toHaveLength(1);
    expect(bodies.every((body) => body?.equals(audio))).toBe(true);
    expect(bodies).toHaveLength(20);
    expect(hits).toHaveLength(19);
  });

  it('never stores audio that broke off; the next request pays again', async () => {
    const { synthesize, service, disk } = await setup();
    const first = await synthesize(speech('cut'), signal(), 'g1');
    const failed = collect(first.audio);
    service.calls[0]?.audio.write(Buffer.from('partial'));
    service.calls[0]?.audio.destroy(new Error('socket reset'));
    await expect(failed).rejects.toThrow('socket reset');
    expect(disk.size).toBe(0);
    const again = await synthesize(speech('cut'), signal(), 'g1');
    service.calls[1]?.audio.end(Buffer.from('whole'));
    expect((await collect(again.audio)).toString()).toBe('whole');
    expect(service.calls).toHaveLength(2);
  });

  it('lets a waiting request take over (and pay) when the one paying fails', async () => {
    const { synthesize, service } = await setup();
    const leader = await synthesize(speech('oops'), signal(), 'g1');
    const follower = synthesize(speech('oops', 'm2'), signal(), 'g1');
    leader.audio.on('error', () => {});
    service.calls[0]?.audio.destroy(new Error('idle timeout'));
    while (service.calls.length < 2) await new Promise((resolve) => setImmediate(resolve));
    service.calls[1]?.audio.end(Buffer.from('fine'));
    expect((await collect((await follower).audio)).toString()).toBe('fine');
  });

  it('pays every time when the server turned caching off, or the text is too long', async () => {
    for (const options of [{ enabled: false }, { maxChars: 3 }]) {
      const { synthesize, service } = await setup(options);
      for (let i = 0; i < 3; i++) {
        const result = await synthesize(speech('hello'), signal(), 'g1');
        service.calls[i]?.audio.end(Buffer.from('x'));
        await collect(result.audio);
      }
      expect(service.calls).toHaveLength(3);
    }
  });

  it('reports each lookup once: a miss, hits from memory and from disk, a damaged file; none when ineligible', async () => {
    const { synthesize, service, disk, dir, lookups } = await setup({ maxChars: 10 });
    const play = async (text: string, user = 'm1'): Promise<void> => {
      const result = await synthesize(speech(text, user), signal(), 'g1');
      service.calls.at(-1)?.audio.end(Buffer.from(`audio of ${text}`));
      await collect(result.audio);
    };
    const [first, second] = [
      synthesize(speech('gg'), signal(), 'g1'),
      synthesize(speech('gg', 'm2'), signal(), 'g1'),
    ];
    while (service.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
    service.calls[0]?.audio.end(Buffer.from('audio of gg'));
    await Promise.all([first, second].map(async (result) => collect((await result).audio)));
    // Read straight from the disk (no lookup reported) until the file is settled and the single flight is over.
    const key = `${SPEAKER.id}:${Buffer.from('gg').toString('hex')}`;
    while ((await disk.get(key)).kind !== 'hit') await new Promise((resolve) => setImmediate(resolve));
    await play('gg', 'm3');
    expect(lookups).toEqual(['miss', 'hit', 'hit']);

    truncateSync(join(dir, `${key}.hac`), 10);
    await play('gg', 'm4');
    await play('far too long to cache');
    expect(lookups).toEqual(['miss', 'hit', 'hit', 'corrupt']);
    expect(service.calls).toHaveLength(3);
  });

  it('gives up waiting when the waiting request is aborted', async () => {
    const { synthesize, service } = await setup();
    await synthesize(speech('wait'), signal(), 'g1');
    const controller = new AbortController();
    const waiting = synthesize(speech('wait', 'm2'), controller.signal, 'g1');
    controller.abort();
    await expect(waiting).rejects.toThrow(/aborted/);
    service.calls[0]?.audio.end(Buffer.from('x'));
  });
});
