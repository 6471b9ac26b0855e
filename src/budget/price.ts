/** The price per character: where it comes from, and how the service's own figures teach it. */
import type { AccountState } from './records.ts';

/**
 * Where the price per character comes from: the service's own figures, the configuration, or, before either, a
 * deliberately high assumption ({@link ASSUMED_PRICE_PER_CHAR_USD}) so that estimates err on the side of the floor.
 */
export type PriceSource = 'learned' | 'configured' | 'assumed';

/**
 * The price assumed before the service's figures or the configuration give one: $0.30 per thousand characters,
 * the top of what commercial TTS services charge, so an estimate made with it is never too low.
 */
export const ASSUMED_PRICE_PER_CHAR_USD = 0.0003;

/** Half the service's apparent rounding unit of a cost (it reports whole micro-dollars). */
const COST_ROUNDING_USD = 0.5e-6;

/**
 * The price per character after a generation of `characters` cost `costUsd`. The service rounds each cost, so a
 * longer text pins the price more precisely: the known price is kept while the new figure agrees with it within
 * rounding and comes from fewer characters; a figure that disagrees means the price changed, and replaces it.
 */
export function learnPrice(state: AccountState, costUsd: number, characters: number): AccountState {
  const observed = costUsd / characters;
  const known = state.pricePerCharUsd;
  const knownCharacters = state.priceCharacters ?? 1;
  const tolerance = COST_ROUNDING_USD / characters + COST_ROUNDING_USD / knownCharacters;
  if (known !== null && characters < knownCharacters && Math.abs(observed - known) <= tolerance) return state;
  return { ...state, pricePerCharUsd: observed, priceCharacters: characters };
}
