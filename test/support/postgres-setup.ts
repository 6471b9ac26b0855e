import type { TestProject } from 'vitest/node';
import { startPostgres } from './postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The throwaway cluster's admin URL, or why there is none. */
    postgres: { readonly url: string } | { readonly skipped: string };
  }
}

/**
 * Vitest global setup: one throwaway PostgreSQL cluster for the whole run, torn down at the end. Without
 * PostgreSQL installed the PostgreSQL variants of the storage and budget tests are skipped, saying why; with
 * CI=true they must run, so a missing or broken server fails the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const ci = process.env.CI === 'true' || process.env.CI === '1';
  const server = await startPostgres();
  if (server.kind === 'missing') {
    if (ci) throw new Error(`CI=true and ${server.reason}: the PostgreSQL tests must run in CI.`);
    project.provide('postgres', { skipped: server.reason });
    return async () => {};
  }
  project.provide('postgres', { url: server.url });
  return () => server.stop();
}
