import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { managerLogger, watchShard } from '../../src/shard/manager.ts';

/** The keys of one JSON line as written, in order (JSON.parse would silently keep the last of a repeated key). */
function keysOf(line: string): string[] {
  return [...line.matchAll(/"([^"]+)":/g)].map((match) => match[1] as string);
}

describe('the manager’s log lines', () => {
  it('carry each key once: "process":"manager", and "shard" only as a shard id', () => {
    const lines: string[] = [];
    const logger = managerLogger(
      createLogger({ level: 'info', write: (line) => lines.push(line), pretty: false }),
    );
    const shard = Object.assign(new EventEmitter(), { id: 3 });
    watchShard(shard as unknown as Parameters<typeof watchShard>[0], logger, () => false);
    logger.info('starting shards');
    shard.emit('spawn', { pid: 4242 });
    shard.emit('death', { exitCode: 1, signalCode: null });

    expect(lines).toHaveLength(3);
    for (const line of lines) {
      const keys = keysOf(line);
      expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
      expect(JSON.parse(line)).toMatchObject({ process: 'manager' });
    }
    expect(lines.slice(1).map((line) => JSON.parse(line).shard)).toEqual([3, 3]);
    expect(JSON.parse(lines[0] as string).shard).toBeUndefined();
  });
});
