import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, inject, it } from 'vitest';
import { type Database, openDatabase } from '../../src/storage/index.ts';
import { createDatabase } from './postgres.ts';

/** Where an empty database lives; open it as often as wanted (a restart, a second process, a second pool). */
export interface DatabaseTarget {
  open(): Database;
}

/** One storage engine the storage and budget tests run against. */
export interface Backend {
  readonly name: 'sqlite' | 'postgres';
  /** A new, empty database. */
  fresh(): Promise<DatabaseTarget>;
}

const opened: Database[] = [];
const dirs: string[] = [];
const track = (db: Database): Database => {
  opened.push(db);
  return db;
};

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const sqlite: Backend = {
  name: 'sqlite',
  async fresh() {
    const dir = mkdtempSync(join(tmpdir(), 'herald-db-'));
    dirs.push(dir);
    const path = join(dir, 'nested', 'herald.sqlite');
    return { open: () => track(openDatabase({ kind: 'sqlite', path })) };
  },
};

const cluster = inject('postgres');

const postgres: Backend = {
  name: 'postgres',
  async fresh() {
    if (!('url' in cluster)) throw new Error(cluster.skipped);
    const url = await createDatabase(cluster.url);
    return { open: () => track(openDatabase({ kind: 'postgres', url, poolSize: 5 })) };
  },
};

/** The engines available here: SQLite always, PostgreSQL when the global setup could start a cluster. */
export const backends: readonly Backend[] = 'url' in cluster ? [sqlite, postgres] : [sqlite];

/**
 * `describe.each` over every backend, so one test file proves both engines. Without PostgreSQL its variant shows
 * as skipped, with the reason in its name.
 */
export function describeEachBackend(name: string, body: (backend: Backend) => void): void {
  describe.each(backends)(`${name} ($name)`, body);
  if ('skipped' in cluster) {
    describe.skip(`${name} (postgres) — skipped: ${cluster.skipped}`, () => {
      it('runs against PostgreSQL', () => {});
    });
  }
}
