/** Money in the guard: compared in whole nano-dollars, shown to people in dollars. */

// Money is compared in whole nano-dollars: 0.5003 − 0.0003 in floating point is 0.49999999999999994, which
// would refuse a request that lands exactly on the floor.
export const toNanos = (usd: number): number => Math.round(usd * 1e9);
export const fromNanos = (nanos: number): number => nanos / 1e9;

/** Dollars for people: cents always shown, more digits only when they matter (`$0.52`, `$0.0003`). */
export function formatUsd(usd: number): string {
  const sign = usd < 0 ? '-' : '';
  const fixed = Math.abs(usd)
    .toFixed(6)
    .replace(/0{1,4}$/, '');
  return `${sign}$${fixed}`;
}
