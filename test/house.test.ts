import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The house rules a newcomer relies on: the code's rooms import each other without cycles, and no file grows past
// what reads in one sitting.

const ROOT = resolve(import.meta.dirname, '..');
/** Folders of the running bot: its source and its commands. */
const RUNTIME = ['src', 'commands'];
/** No file under src/ longer than this; the composition root shorter still. */
const MAX_LINES = 450;
const MAX_ROOT_LINES = 250;

const IMPORT = /^\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.[^'"]+)['"]/gm;

/** Every `.ts` file under `dir`, as absolute paths. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Each file's relative imports (type-only ones too: a cycle of types still ties two rooms together). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(IMPORT)].map((match) => resolve(dirname(file), match[1] ?? ''));
    graph.set(file, targets);
  }
  return graph;
}

/** One import cycle in `graph` (its files in order, the first repeated at the end), or undefined when none. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (file: string): string[] | undefined => {
    if (onPath.has(file)) return [...path.slice(path.indexOf(file)), file];
    if (done.has(file) || !graph.has(file)) return undefined;
    path.push(file);
    onPath.add(file);
    for (const target of graph.get(file) ?? []) {
      const cycle = visit(target);
      if (cycle) return cycle;
    }
    path.pop();
    onPath.delete(file);
    done.add(file);
    return undefined;
  };
  for (const file of graph.keys()) {
    const cycle = visit(file);
    if (cycle) return cycle;
  }
  return undefined;
}

describe('the house', () => {
  it('finds a cycle when there is one (the check itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(findCycle(graph)).toEqual(['a', 'b', 'c', 'a']);
    expect(findCycle(new Map([...graph, ['c', []]]))).toBeUndefined();
  });

  it('has no import cycle in src/ and commands/', () => {
    const files = RUNTIME.flatMap((dir) => filesUnder(join(ROOT, dir)));
    expect(files.length).toBeGreaterThan(100);
    const cycle = findCycle(importGraph(files));
    expect(cycle?.map((file) => relative(ROOT, file)).join(' → ')).toBeUndefined();
  });

  it(`keeps every file in src/ under ${MAX_LINES} lines, and the composition root under ${MAX_ROOT_LINES}`, () => {
    const lines = (file: string): number => readFileSync(file, 'utf8').split('\n').length - 1;
    const long = filesUnder(join(ROOT, 'src'))
      .filter((file) => lines(file) > MAX_LINES)
      .map((file) => `${relative(ROOT, file)}: ${lines(file)} lines`);
    expect(long).toEqual([]);
    expect(lines(join(ROOT, 'src', 'herald.ts'))).toBeLessThanOrEqual(MAX_ROOT_LINES);
  });
});
