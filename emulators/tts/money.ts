/** Money in whole micro-dollars, so balances never drift and never go negative. */

/** USD to whole micro-dollars, rounded, never below zero. */
export const toMicros = (usd: number): number => Math.max(0, Math.round(usd * 1e6));
/** Whole micro-dollars to USD. */
export const fromMicros = (micros: number): number => micros / 1e6;
