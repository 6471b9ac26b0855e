/** Reading Herald's /metrics during a soak. */

/**
 * The values of unlabelled samples in Herald's /metrics, by the key each name is given under; undefined when it does
 * not answer within `timeoutMs` or one of them is missing.
 */
export async function readMetrics<K extends string>(
  port: number,
  names: Readonly<Record<K, string>>,
  timeoutMs: number,
): Promise<Record<K, number> | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, {
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    const values = {} as Record<K, number>;
    for (const key of Object.keys(names) as K[]) {
      const value = Number(new RegExp(`^${names[key]} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
      if (!Number.isFinite(value)) return undefined;
      values[key] = value;
    }
    return values;
  } catch {
    return undefined;
  }
}
