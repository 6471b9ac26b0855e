import { PassThrough, Transform } from 'node:stream';
import type { Logger } from '../log.ts';
import { countCharacters, type GenerateResult, TtsAbortedError } from '../tts/index.ts';
import type { SpeechRequest, Synthesize } from '../voice/session.ts';
import type { DiskCache, DiskLookup } from './disk.ts';
import type { Entry } from './entry-file.ts';
import type { CacheStore } from './store.ts';

/**
 * How the cache answered a request it may serve, counted once per request: played without paying (`hit`, from disk
 * or from a concurrent request's audio), paid for (`miss`), or paid for because its file was damaged (`corrupt`).
 */
export type CacheLookup = 'hit' | 'miss' | 'corrupt';

/** Options of {@link cachedSynthesize}. */
export interface CachedSynthesizeOptions {
  readonly disk: DiskCache;
  readonly store: Pick<CacheStore, 'guildEnabled' | 'recordHit'>;
  /** The entry name of a request (see `cacheKey`). */
  readonly keyOf: (request: SpeechRequest) => string;
  /** Longer utterances are never looked up nor stored. */
  readonly maxChars: number;
  /** Requests cached whatever their server chose: fixed sentences such as voice previews, not members' speech. */
  readonly alwaysCache?: (request: SpeechRequest) => boolean;
  /** The saving of a hit whose original cost the service never reported. */
  readonly estimateUsd: (characters: number) => number | undefined;
  readonly logger: Logger;
  /** Clock in ms; `Date.now` by default. */
  readonly now?: () => number;
  /** Told of each paid result and the result returned in its place (same headers, the audio behind a tee). */
  readonly onPaid?: (returned: GenerateResult, paid: GenerateResult) => void;
  /** Told how each request the cache may serve was answered; too long or opted out is no lookup. */
  readonly onLookup?: (kind: CacheLookup) => void;
}

/** No utterance short enough to be cached comes near this; a stream that does is not held in memory. */
const MAX_ENTRY_AUDIO_BYTES = 8 * 1024 * 1024;
/** How often a request whose audio another process is generating looks for the stored entry. */
const CLAIM_POLL_MS = 25;

/**
 * Wraps a paid synthesis with the audio cache. A hit plays from disk and `paid` is never called, so nothing is
 * reserved or charged. A miss calls `paid` once per key however many ask at the same time (single flight): the
 * first streams the service's response to its listeners while the same bytes are collected (a tee, so the cache
 * never delays the first play); the others wait for those bytes and play them from memory. Complete audio is
 * then written to disk; audio that failed or was cut short is never stored. Across the processes sharing the folder
 * the flight is a claim (a lock file per key): a request in another process waits for the claimant's entry on disk,
 * and pays only when the claimant failed or died.
 */
export function cachedSynthesize(paid: Synthesize, options: CachedSynthesizeOptions): Synthesize {
  const { disk, store, keyOf, logger } = options;
  const now = options.now ?? Date.now;
  // Resolves with the leader's complete audio, or undefined when the leader failed (then another one leads).
  // Kept until the file is on disk, so a request in between is served from memory rather than paid again.
  const flights = new Map<string, Promise<Entry | undefined>>();
  /** Registers this process's flight for `key`, synchronously: a request arriving after it waits for it. */
  const openFlight = (key: string): Flight => {
    let settle: (entry: Entry | undefined) => void = () => {};
    const flight = new Promise<Entry | undefined>((resolve) => {
      settle = resolve;
    });
    flights.set(key, flight);
    return { flight, settle };
  };
  /** Ends a flight that paid nothing: its waiters get `entry`, or look again. */
  const closeFlight = (key: string, { flight, settle }: Flight, entry: Entry | undefined): void => {
    settle(entry);
    if (flights.get(key) === flight) flights.delete(key);
  };

  const served = (
    entry: Entry,
    request: SpeechRequest,
    guildId: string,
    characters: number,
  ): GenerateResult => {
    options.onLookup?.('hit');
    const savedUsd = entry.meta.costUsd ?? options.estimateUsd(characters) ?? 0;
    store
      .recordHit({ guildId, userId: request.requestedBy.id, characters, savedUsd, at: now() })
      .catch((error: unknown) => logger.warn('could not record an audio cache hit', { err: error }));
    const audio = new PassThrough();
    audio.end(entry.audio);
    return {
      audio,
      contentType: entry.meta.contentType,
      format: entry.meta.format,
      sampleRate: entry.meta.sampleRate,
      durationS: entry.meta.durationS,
      costUsd: 0,
      balanceUsd: undefined,
      requestId: undefined,
      attempts: 0,
    };
  };

  const lead = async (
    key: string,
    request: SpeechRequest,
    signal: AbortSignal,
    guildId: string,
    characters: number,
    release: () => void,
    { flight, settle }: Flight,
  ): Promise<GenerateResult> => {
    const land = (entry: Entry | undefined): void => {
      settle(entry);
      if (!entry) {
        if (flights.get(key) === flight) flights.delete(key);
        release();
        return;
      }
      disk
        .put(key, entry)
        .then((outcome) => logger.debug('audio cache store', { outcome, bytes: entry.audio.length }))
        .catch((error: unknown) => logger.warn('could not store audio in the cache', { err: error }))
        .finally(() => {
          if (flights.get(key) === flight) flights.delete(key);
          // After the file is on disk: another process waiting on the claim then finds the entry.
          release();
        });
    };

    let result: GenerateResult;
    try {
      result = await paid(request, signal, guildId);
    } catch (error) {
      land(undefined);
      throw error;
    }
    const chunks: Buffer[] = [];
    let collected = 0;
    let landed = false;
    const finish = (audio: Buffer | undefined): void => {
      if (landed) return;
      landed = true;
      land(
        audio && {
          audio,
          meta: {
            format: result.format,
            contentType: result.contentType,
            sampleRate: result.sampleRate,
            durationS: result.durationS,
            characters,
            costUsd: result.costUsd,
            createdAt: now(),
          },
        },
      );
    };
    const tee = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        if (collected <= MAX_ENTRY_AUDIO_BYTES) {
          chunks.push(chunk);
          collected += chunk.length;
        }
        callback(null, chunk);
      },
      flush(callback) {
        // Called only once the service's stream ended cleanly: every byte it sent has passed through.
        finish(collected <= MAX_ENTRY_AUDIO_BYTES && collected > 0 ? Buffer.concat(chunks) : undefined);
        callback();
      },
    });
    result.audio.on('error', (error) => {
      finish(undefined);
      tee.destroy(error);
    });
    tee.on('close', () => finish(undefined));
    result.audio.pipe(tee);
    const returned: GenerateResult = { ...result, audio: tee };
    options.onPaid?.(returned, result);
    return returned;
  };

  return async (request, signal, guildId) => {
    const characters = countCharacters(request.text);
    if (characters > options.maxChars) return paid(request, signal, guildId);
    if (!(options.alwaysCache?.(request) ?? false) && !(await store.guildEnabled(guildId))) {
      return paid(request, signal, guildId);
    }
    const key = keyOf(request);
    let damaged = false;
    for (;;) {
      if (signal.aborted) throw new TtsAbortedError('The speech request was aborted.');
      const flight = flights.get(key);
      if (flight) {
        const entry = await abortable(flight, signal);
        if (entry) return served(entry, request, guildId, characters);
        continue;
      }
      const stored = await disk.get(key);
      if (stored.kind === 'hit') return served(stored.entry, request, guildId, characters);
      if (stored.kind === 'corrupt') damaged = true;
      // Another request may have started paying while the disk was read.
      if (flights.has(key)) continue;
      const own = openFlight(key);
      let release: (() => void) | undefined;
      let landed: DiskLookup;
      try {
        release = disk.claim(key);
        // A stored entry may have landed between the read and the claim.
        landed = release ? await disk.get(key) : { kind: 'miss' };
      } catch (error) {
        release?.();
        closeFlight(key, own, undefined);
        throw error;
      }
      if (!release) {
        // Another process is paying for it: its entry, once stored, is read from disk at the top of the loop.
        closeFlight(key, own, undefined);
        await waitForClaim(key, signal);
        continue;
      }
      if (landed.kind === 'hit') {
        closeFlight(key, own, landed.entry);
        release();
        return served(landed.entry, request, guildId, characters);
      }
      options.onLookup?.(damaged ? 'corrupt' : 'miss');
      return lead(key, request, signal, guildId, characters, release, own);
    }
  };

  /** Resolves once no live process holds the claim on `key`; rejects when `signal` aborts. */
  async function waitForClaim(key: string, signal: AbortSignal): Promise<void> {
    while (disk.claimed(key)) {
      await abortable(new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS)), signal);
    }
  }
}

/** One process's generation of a key, which its other requests for the key wait for. */
interface Flight {
  readonly flight: Promise<Entry | undefined>;
  readonly settle: (entry: Entry | undefined) => void;
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new TtsAbortedError('The speech request was aborted.'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
