import { collectBounded } from '../audio/collect.ts';
import { UserFacingError } from '../discord/member-facing.ts';
import type { GenerateResult } from '../tts/index.ts';
import type { SpeechRequest, Synthesize } from '../voice/session.ts';
import { analyseOggOpus, type VoiceClipFacts } from './analyse.ts';

/** Speech ready to post as a voice message: the service's Ogg Opus bytes as they came, with their facts. */
export interface VoiceClip extends VoiceClipFacts {
  /** The attachment's file name. */
  readonly name: string;
  readonly audio: Buffer;
  /** The synthesis it came from (a cache hit or a paid one), for {@link VoiceMessages.undelivered}. */
  readonly result: GenerateResult;
}

/** Makes voice messages out of speech requests. */
export interface VoiceMessages {
  /**
   * Synthesises `request` through the member's temperature, the audio cache and the budget guard (a hit costs
   * nothing; a refusal rejects with a `BudgetRefusedError`), then reads its length and waveform. `ledgerId` is the
   * server whose budget pays (and whose cache choice applies).
   * @throws what the synthesis throws; {@link UserFacingError} for audio that cannot be a voice message.
   */
  render(request: SpeechRequest, ledgerId: string): Promise<VoiceClip>;
  /** Tells the ledger that a rendered clip never reached Discord (its paid audio was wasted), and why. */
  undelivered(clip: VoiceClip, reason: string): void;
}

/** Options of {@link createVoiceMessages}. */
export interface VoiceMessagesOptions {
  /** The same synthesis voice sessions use (temperature, cache, guard, service). */
  readonly synthesize: Synthesize;
  /** Marks a result's paid audio as never heard (the voice manager's `onUnplayed`). */
  readonly unplayed: (result: GenerateResult, reason: string) => void;
}

/** The name Discord's own clients give a voice message's file. */
export const VOICE_MESSAGE_FILE = 'voice-message.ogg';

/**
 * A voice message's audio this long is not speech Herald made: the service's longest answer is well below it,
 * and Discord's smallest upload limit (10 MiB) is above it.
 */
const MAX_CLIP_BYTES = 8 * 1024 * 1024;

/** Creates the voice-message renderer. */
export function createVoiceMessages(options: VoiceMessagesOptions): VoiceMessages {
  return {
    async render(request, ledgerId) {
      const result = await options.synthesize(request, new AbortController().signal, ledgerId);
      const audio = await collectBounded(
        result.audio,
        MAX_CLIP_BYTES,
        'The voice message audio is unexpectedly long.',
      );
      if (result.format !== 'opus') {
        options.unplayed(result, 'not Ogg Opus: no voice message');
        throw new UserFacingError(NOT_OPUS);
      }
      try {
        return { name: VOICE_MESSAGE_FILE, audio, result, ...(await analyseOggOpus(audio)) };
      } catch (error) {
        options.unplayed(result, 'voice message audio unreadable');
        throw error;
      }
    },
    undelivered(clip, reason) {
      options.unplayed(clip.result, reason);
    },
  };
}

/** Why a WAV service cannot make voice messages (Herald never re-encodes). */
export const NOT_OPUS =
  'Voice messages need Ogg Opus audio, and this speech service sends WAV, so Herald cannot send one.';
