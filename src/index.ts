import 'dotenv/config';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { isUnconfigured, parseConfig, secretsOf } from './config.ts';
import type { Herald } from './herald.ts';
import { createLogger } from './log.ts';
import { defaultShardProcesses, SHARD_PROCESSES_OPTION } from './shard/config.ts';
import { machineShape } from './shard/machine.ts';

// The process entry: configuration from the environment (and .env), a logger, then the bot. Only this file exits.
// With no Discord and no TTS configuration at all, a first-time visitor gets the sandbox (sandbox/main.ts). An
// installation without it (the container image ships only the bot) lists what to configure instead. On a machine
// Herald runs as this one process unless the operator asks for shard processes with SHARD_PROCESSES (a number, or
// auto: twice the cores, as the memory holds); then src/shard/main.ts spawns this file once for each shard.
// Node's compile cache for what loads next (Herald, discord.js, the sandbox): after the first start, a restart loads
// them in about half the time (1.7 s → 0.7 s on 2 cores). Shard processes share it (src/shard/main.ts); an
// operator's own NODE_COMPILE_CACHE (or NODE_DISABLE_COMPILE_CACHE) wins.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'herald-node-compile-cache');
module.enableCompileCache?.(process.env.NODE_COMPILE_CACHE);
// `npm start` runs the bundle (dist/index.js, beside dist/shard/main.js: scripts/build.ts), tests the sources: the
// sharding manager is the entry beside this one, whichever it is. The sandbox is never bundled: dist/ lies beside
// src/, so the same path finds it from either.
const SANDBOX = new URL('../sandbox/main.ts', import.meta.url);
const SHARDS = new URL(`./shard/main${extname(import.meta.filename)}`, import.meta.url);
// Set but empty is unset, as everywhere in Herald's configuration (a .env copied from .env.example says
// `SHARD_COUNT=`). discord.js also reads SHARD_COUNT and SHARDS from the environment on its own, and takes '' for 0:
// "The shardCount option must be a number greater than or equal to 1".
for (const name of ['SHARD_COUNT', 'SHARDS']) if (process.env[name]?.trim() === '') delete process.env[name];
if (isUnconfigured(process.env) && existsSync(SANDBOX)) {
  await import(SANDBOX.href);
} else {
  const parsed = parseConfig(process.env);
  // A configuration with problems is reported here, in one process, whatever the cores.
  const shardProcesses = parsed.ok ? defaultShardProcesses(process.env, machineShape()) : undefined;
  if (shardProcesses === undefined) {
    await startBot(parsed);
  } else {
    process.env.SHARD_COUNT = String(shardProcesses);
    // The manager and its shards read SHARD_COUNT now; both set would be a contradiction to them.
    delete process.env[SHARD_PROCESSES_OPTION];
    await import(SHARDS.href);
  }
}

async function startBot(parsed: ReturnType<typeof parseConfig>): Promise<void> {
  if (!parsed.ok) {
    const list = parsed.problems.map((problem) => `  - ${problem}`).join('\n');
    process.stderr.write(`Herald cannot start; fix the configuration:\n${list}\n`);
    process.exit(1);
  }
  const config = parsed.value;
  const logger = createLogger({ level: config.logLevel, secrets: secretsOf(config) });

  // Crash policy. A rejected promise nobody awaited leaves the process in a known state (that one task failed):
  // log it and go on. An uncaught exception may have left any state half-changed: log it, stop as cleanly as 10 s
  // allow (ledger rows are committed synchronously, so none is lost), and exit 1 so the supervisor restarts Herald.
  process.on('unhandledRejection', (reason) => {
    logger.error('unhandled rejection', { err: reason });
    herald?.processError('unhandled-rejection');
  });
  let herald: Herald | undefined;
  const exitAfterStop = (code: number): void => {
    // A stop that hangs (a socket that never closes) must not keep a deploy waiting for ever.
    setTimeout(() => {
      logger.error('shutdown took longer than 10 s; exiting anyway');
      process.exit(1);
    }, 10_000).unref();
    (herald?.stop() ?? Promise.resolve()).then(
      () => process.exit(code),
      (error: unknown) => {
        logger.error('shutdown failed', { err: error });
        process.exit(1);
      },
    );
  };
  process.once('uncaughtException', (error) => {
    herald?.processError('uncaught-exception');
    logger.error('uncaught exception: the process state is unknown, so Herald stops and exits', {
      err: error,
    });
    exitAfterStop(1);
  });

  // From the first moment: a stop that arrives while Herald is still starting exits cleanly too.
  let stopping = false;
  const shutdown = (signal: string) => {
    // A stop is often asked more than once: systemd (KillMode=control-group) and a terminal's Ctrl-C signal every
    // process of the group, and then the sharding manager passes the stop on to each shard. The first one stops;
    // the others must not end the process (with no listener left, Node's default for SIGTERM kills it at once, and
    // cut the sentence being said).
    if (stopping) {
      logger.info('already stopping', { signal });
      return;
    }
    logger.info('shutting down', { signal });
    stopping = true;
    exitAfterStop(0);
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  // A shard of `npm run start:shards` stops with its manager (its IPC channel closes), even after a kill -9 of it,
  // and even while it starts: a shard standing by for its lease would otherwise outlive its manager and, when the
  // other Herald stops, run its shards with no manager at all.
  if (config.shards.managed) process.once('disconnect', () => shutdown('the sharding manager is gone'));
  try {
    // Another Herald took these shards over (this one stopped renewing its lease): stop, so that two do not answer.
    // Loaded here, after the compile cache is on (a static import would load before it).
    const { startHerald } = await import('./herald.ts');
    herald = await startHerald(config, { logger, onShardsLost: () => exitAfterStop(1) });
    // A shard process runs with --expose-gc (src/shard/node-flags.ts): one full collection once its start is over.
    if (config.shards.managed) {
      const { collectOnceSettled } = await import('./shard/settle-collection.ts');
      collectOnceSettled((globalThis as { gc?: () => void }).gc, logger);
    }
    // Asked to stop while starting: what started is stopped now.
    if (stopping) exitAfterStop(0);
  } catch (error) {
    logger.error('Herald could not start', { err: error });
    process.exit(1);
  }
}
