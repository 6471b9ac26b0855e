// The persistent audio cache: configuration, the key, the files, the database rows, and the decorator that
// puts the cache in front of the paid synthesis. Import from here.
import type { Logger } from '../log.ts';
import type { ApiForm, GenerateResult } from '../tts/index.ts';
import type { SpeechRequest, Synthesize } from '../voice/session.ts';
import type { CacheConfig } from './config.ts';
import { openDiskCache } from './disk.ts';
import { cacheKey } from './key.ts';
import type { CacheStore } from './store.ts';
import { type CacheLookup, cachedSynthesize } from './synthesize.ts';

export { CACHE_DEFAULTS, type CacheConfig, type CacheConfigResult, parseCacheConfig } from './config.ts';
export {
  type DiskCache,
  type DiskCacheOptions,
  type DiskLookup,
  openDiskCache,
  type PutOutcome,
} from './disk.ts';
export { decodeEntry, type Entry, type EntryMeta, encodeEntry } from './entry-file.ts';
export { type CacheKeyParts, cacheKey } from './key.ts';
export { adoptShardCacheFolders, prepareShardCacheFolders } from './shard-folders.ts';
export {
  CACHE_MIGRATIONS,
  type CacheHit,
  type CacheSavings,
  type CacheStore,
  createCacheStore,
} from './store.ts';
export { type CachedSynthesizeOptions, type CacheLookup, cachedSynthesize } from './synthesize.ts';

/** What the cache reports as it works, for the operations view; every call is cheap and never throws. */
export interface CacheObserver {
  /** A request the cache may serve was answered (see {@link CacheLookup}). */
  lookup(kind: CacheLookup): void;
  /** Entries were evicted, least recently used first, to make room. */
  evicted(entries: number): void;
}

/** Options of {@link createAudioCache}. */
export interface AudioCacheOptions {
  readonly config: CacheConfig;
  /** The service the audio comes from: part of every key. */
  readonly service: { readonly baseUrl: string; readonly form: ApiForm };
  readonly store: CacheStore;
  /** The saving of a hit whose original cost is unknown (the budget guard's estimate). */
  readonly estimateUsd: (characters: number) => number | undefined;
  /** Requests cached whatever their server chose (fixed sentences such as previews). */
  readonly alwaysCache?: (request: SpeechRequest) => boolean;
  readonly logger: Logger;
  /** Told of lookups and evictions (the savings are in the store's ledger). */
  readonly observer?: CacheObserver;
}

/** The cache as the composition root uses it. */
export interface AudioCache {
  /** False when `AUDIO_CACHE_MB` is 0: {@link wrap} then returns the paid synthesis unchanged. */
  readonly enabled: boolean;
  /** Puts the cache in front of a paid synthesis. */
  wrap(paid: Synthesize): Synthesize;
  /**
   * The paid synthesis's own result behind one {@link wrap} returned (the ledger knows that one); the result
   * itself when it was not paid through the cache (a hit, or caching off).
   */
  paidResultOf(result: GenerateResult): GenerateResult;
  /** Entries on disk now (0 when off). */
  readonly entries: number;
  /** Bytes the entries take on disk now (0 when off). */
  readonly bytes: number;
}

/** Opens the cache folder and reads the installation's secret; with `AUDIO_CACHE_MB=0` touches nothing. */
export async function createAudioCache(options: AudioCacheOptions): Promise<AudioCache> {
  const { config, service, store, logger, observer } = options;
  if (config.maxBytes === 0) {
    return { enabled: false, wrap: (paid) => paid, paidResultOf: (result) => result, entries: 0, bytes: 0 };
  }
  // Weak: a result that was played and dropped leaves nothing behind.
  const paidResults = new WeakMap<GenerateResult, GenerateResult>();
  const [secret, disk] = await Promise.all([
    store.secret(),
    openDiskCache({
      dir: config.dir,
      maxBytes: config.maxBytes,
      maxAgeMs: config.maxAgeMs,
      logger,
      ...(observer ? { onEvicted: (entries: number) => observer.evicted(entries) } : {}),
    }),
  ]);
  logger.info('audio cache open', { entries: disk.size, bytes: disk.bytes, maxBytes: config.maxBytes });
  return {
    enabled: true,
    get entries() {
      return disk.size;
    },
    get bytes() {
      return disk.bytes;
    },
    paidResultOf: (result) => paidResults.get(result) ?? result,
    wrap: (paid) =>
      cachedSynthesize(paid, {
        disk,
        store,
        keyOf: (request) =>
          cacheKey(secret, {
            text: request.text,
            speakerId: request.speaker.id,
            temperature: request.temperature,
            form: service.form,
            baseUrl: service.baseUrl,
          }),
        maxChars: config.maxChars,
        estimateUsd: options.estimateUsd,
        onPaid: (returned, paidResult) => paidResults.set(returned, paidResult),
        logger,
        ...(options.alwaysCache ? { alwaysCache: options.alwaysCache } : {}),
        ...(observer ? { onLookup: (kind: CacheLookup) => observer.lookup(kind) } : {}),
      }),
  };
}
