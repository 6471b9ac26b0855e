/**
 * Polls `check` every 100 ms until it returns something other than undefined, and returns that; throws after
 * `timeoutMs`. A bounded wait for something asynchronous, not a timing assertion.
 */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await check();
    if (result !== undefined) return result;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
