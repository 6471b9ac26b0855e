import type { GenerateResult, TtsClient } from '../tts/index.ts';
import { countCharacters } from '../tts/index.ts';
import type { SpeechRequest } from '../voice/session.ts';
import type { BudgetGuard, BudgetProbe } from './guard-types.ts';
import { BudgetRefusedError } from './refusal.ts';

/** A synthesis that knows which server it speaks for (the guild id is what the daily cap is kept by). */
export type GuildSynthesize = (
  request: SpeechRequest,
  signal: AbortSignal,
  guildId: string,
) => Promise<GenerateResult>;

/** A guarded synthesis, and the way to tell the ledger that audio it paid for was never heard. */
export interface BudgetedSynthesis {
  readonly synthesize: GuildSynthesize;
  /** Marks the ledger row of `result` (from {@link synthesize}) as wasted, with why; ignores other results. */
  readonly unplayed: (result: GenerateResult, reason: string) => void;
}

/**
 * Wraps a generation with the guard: reserve before (refused requests reject with {@link BudgetRefusedError} and
 * never reach the service), settle when the headers arrive, release on failure. `generate` must send
 * `request.text` unchanged, because that is what the reservation counted.
 */
export function budgetedSynthesize(
  guard: BudgetGuard,
  generate: (request: SpeechRequest, signal: AbortSignal) => Promise<GenerateResult>,
): BudgetedSynthesis {
  // Which ledger row each result was settled in; weak, so results that are played and dropped leave nothing.
  const rows = new WeakMap<GenerateResult, number>();
  // Results reported unplayed before their row was written (the database was away when they were settled).
  const unplayedEarly = new WeakMap<GenerateResult, string>();
  return {
    async synthesize(request, signal, guildId) {
      const outcome = await guard.acquire(
        { guildId, userId: request.requestedBy.id, characters: countCharacters(request.text) },
        signal,
      );
      if (outcome.kind !== 'reserved') throw new BudgetRefusedError(outcome);
      let result: GenerateResult;
      try {
        result = await generate(request, signal);
      } catch (error) {
        await guard.release(outcome.reservation, error);
        throw error;
      }
      // Never rejects: while the database is away the row is written later, and the audio plays meanwhile.
      await guard.settle(
        outcome.reservation,
        { costUsd: result.costUsd, balanceUsd: result.balanceUsd, requestId: result.requestId },
        (ledgerId) => {
          const reason = unplayedEarly.get(result);
          if (reason === undefined) rows.set(result, ledgerId);
          else void guard.markWasted(ledgerId, reason);
        },
      );
      return result;
    },
    unplayed(result, reason) {
      const ledgerId = rows.get(result);
      if (ledgerId !== undefined) void guard.markWasted(ledgerId, reason);
      else unplayedEarly.set(result, reason);
    },
  };
}

/** The text of a probe: one character is the cheapest paid call the service has. */
export const PROBE_TEXT = 'a';

/**
 * A {@link BudgetProbe} on the TTS client: generates {@link PROBE_TEXT} with `speakerId` (or the first listed
 * speaker), reads the money headers and lets the short audio drain unplayed.
 */
export function createTtsProbe(tts: TtsClient, speakerId?: string): BudgetProbe {
  return async () => {
    const id = speakerId ?? (await tts.speakers())[0]?.id;
    if (id === undefined)
      throw new Error('The speech service lists no voices, so the balance cannot be probed.');
    const result = await tts.generate({ text: PROBE_TEXT, speakerId: id });
    // The charge is made before the body is sent; the audio is not wanted, and an error in it changes nothing.
    result.audio.on('error', () => {});
    result.audio.resume();
    return {
      costUsd: result.costUsd,
      balanceUsd: result.balanceUsd,
      requestId: result.requestId,
      characters: countCharacters(PROBE_TEXT),
    };
  };
}
