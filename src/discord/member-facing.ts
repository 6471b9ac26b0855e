/**
 * What members read, wherever it is written: a refusal that is already a sentence for them, and whole numbers the way
 * they read them. A leaf module (it imports nothing), so any part may use it without a cycle.
 */

/** An error whose message is already a sentence for the member (a refusal, not a fault). */
export class UserFacingError extends Error {
  override readonly name: string = 'UserFacingError';
}

/**
 * Whole numbers as members read them: `1,234`. One formatter for the process, made once. `n.toLocaleString('en')`
 * builds an ICU formatter unless V8's one cached formatter matches (any other locale or option asked for since
 * replaces it: 25–80 µs a call then, against about 1 µs); in Herald's shards it did not hold, and a CPU profile of
 * 250 members asking at once put 0.5 ms of each /speak on that one call (`npm run bench -- --cpu-prof`).
 */
const COUNT = new Intl.NumberFormat('en');

/** `n` with thousands separators, in English. */
export function formatCount(n: number): string {
  return COUNT.format(n);
}
