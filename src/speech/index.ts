// The paid path every utterance takes, built once: the member's temperature, then the audio cache (a hit stops
// there), then the budget guard, then the TTS service. Voice, previews and voice messages all speak through it.
import { type BudgetGuard, budgetedSynthesize, type GuildSynthesize } from '../budget/index.ts';
import {
  type AudioCache,
  adoptShardCacheFolders,
  type CacheStore,
  createAudioCache,
} from '../cache/index.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { type MemberStore, tunedSynthesize } from '../members/index.ts';
import { isPreview } from '../members/preview.ts';
import { type OpsEvents, observeAudioCache, observeCacheStore, observeGenerate } from '../ops/index.ts';
import type { GenerateResult, TtsClient } from '../tts/index.ts';

/** The paid path, from {@link createSpeech}. */
export interface Speech {
  /** Speaks a request for a server: through the cache, the guard and the service. */
  readonly synthesize: GuildSynthesize;
  /** Tells the ledger that audio it paid for was never heard (a cache hit was never paid for: ignored). */
  readonly unplayed: (result: GenerateResult, reason: string) => void;
  readonly audioCache: AudioCache;
}

/** What {@link createSpeech} is built from. */
export interface SpeechParts {
  readonly config: Pick<Config, 'cache' | 'tts' | 'shards'>;
  readonly tts: TtsClient;
  readonly guard: BudgetGuard;
  readonly cacheStore: CacheStore;
  /** Each member's and server's temperature. */
  readonly members: MemberStore;
  readonly events: OpsEvents;
  /** The cache's logger. */
  readonly logger: Logger;
}

/** Opens the audio cache and builds the paid path in front of the TTS client. */
export async function createSpeech(parts: SpeechParts): Promise<Speech> {
  const { config, tts, guard, events, logger } = parts;
  // One process on the machine's cache folder: what shard processes kept there in folders of their own is its now.
  if (!config.shards.managed && config.cache.maxBytes > 0) {
    await adoptShardCacheFolders(config.cache.dir, logger);
  }
  const audioCache = await createAudioCache({
    config: config.cache,
    service: { baseUrl: config.tts.baseUrl, form: config.tts.form },
    store: observeCacheStore(parts.cacheStore, events),
    estimateUsd: (characters) => guard.estimateUsd(characters),
    // A preview is a fixed sentence, not a member's speech: cached even where a server turned caching off.
    alwaysCache: isPreview,
    logger,
    observer: observeAudioCache(events),
  });
  const budgeted = budgetedSynthesize(
    guard,
    observeGenerate(
      (request, signal) =>
        tts.generate({
          text: request.text,
          speakerId: request.speaker.id,
          ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
          signal,
        }),
      events,
    ),
  );
  return {
    // Outermost first: the member's temperature, then the cache (a hit stops here), then the guard and the service.
    synthesize: tunedSynthesize(audioCache.wrap(budgeted.synthesize), {
      store: parts.members,
      form: config.tts.form,
    }),
    // A first play through the cache is the guard's own result behind the tee.
    unplayed: (result, reason) => budgeted.unplayed(audioCache.paidResultOf(result), reason),
    audioCache,
  };
}
