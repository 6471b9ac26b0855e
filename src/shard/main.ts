import 'dotenv/config';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { parseConfig, secretsOf } from '../config.ts';
import { createLogger } from '../log.ts';
import type { ShardGroup } from './manager.ts';

// `npm run start:shards`: the second process entry (beside src/index.ts, and like it the only code here that
// exits). It reads the same configuration, then runs this machine's shards (SHARD_COUNT, SHARD_IDS) as child
// processes of src/index.ts with discord.js's ShardingManager, each given the same environment.
// Every shard process loads the same modules, and on a restart they all load them at once: Node's compile cache (read
// at each child's start, from the environment it inherits) halves that load after the first start. This process
// uses it too, for the manager it loads below (discord.js). An operator's own NODE_COMPILE_CACHE (or
// NODE_DISABLE_COMPILE_CACHE) wins.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'herald-node-compile-cache');
module.enableCompileCache?.(process.env.NODE_COMPILE_CACHE);
// What this file imports above is light (the configuration, the logger): the manager, and with it discord.js, loads
// once the compile cache is on. On a restart the shards wait for this process to spawn them.
const { managerLogger, startShardGroup } = await import('./manager.ts');
const parsed = parseConfig(process.env);
if (!parsed.ok) {
  const list = parsed.problems.map((problem) => `  - ${problem}`).join('\n');
  process.stderr.write(`Herald cannot start its shards; fix the configuration:\n${list}\n`);
  process.exit(1);
}
const config = parsed.value;
const logger = managerLogger(createLogger({ level: config.logLevel, secrets: secretsOf(config) }));
process.on('unhandledRejection', (reason) => logger.error('unhandled rejection', { err: reason }));

let group: ShardGroup | undefined;
let stopping = false;
const stop = (code: number): void => {
  if (stopping) return;
  stopping = true;
  (group?.stop() ?? Promise.resolve()).then(
    () => process.exit(code),
    (error: unknown) => {
      logger.error('stopping the shards failed', { err: error });
      process.exit(1);
    },
  );
};
// Every signal is listened to for as long as the manager runs: a second SIGINT or SIGTERM (the whole process group
// signalled, or Ctrl-C pressed twice) must not end it before its shards have played out and stopped.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    logger.info(stopping ? 'already stopping every shard' : 'shutting down every shard', { signal });
    stop(0);
  });
}

try {
  // Each shard runs the entry beside this one: src/index.ts from the sources, dist/index.js from the bundle.
  const script = join(import.meta.dirname, '..', `index${extname(import.meta.filename)}`);
  group = await startShardGroup({ config, script, logger });
} catch (error) {
  logger.error('the shards could not start', { err: error });
  stop(1);
}
