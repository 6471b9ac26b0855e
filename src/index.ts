import 'dotenv/config';
import { parseConfig, secretsOf } from './config.ts';
import { startHerald } from './herald.ts';
import { createLogger } from './log.ts';

// The process entry: configuration from the environment (and .env), a logger, then the bot. Only this file exits.
const parsed = parseConfig(process.env);
if (!parsed.ok) {
  const list = parsed.problems.map((problem) => `  - ${problem}`).join('\n');
  process.stderr.write(`Herald cannot start; fix the configuration:\n${list}\n`);
  process.exit(1);
}
const config = parsed.value;
const logger = createLogger({ level: config.logLevel, secrets: secretsOf(config) });

process.on('unhandledRejection', (reason) => logger.error('unhandled rejection', { err: reason }));

try {
  const herald = await startHerald(config, { logger });
  const shutdown = (signal: string) => {
    logger.info('shutting down', { signal });
    // A stop that hangs (a socket that never closes) must not keep a deploy waiting for ever.
    setTimeout(() => {
      logger.error('shutdown took longer than 10 s; exiting anyway');
      process.exit(1);
    }, 10_000).unref();
    herald.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error('shutdown failed', { err: error });
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
} catch (error) {
  logger.error('Herald could not start', { err: error });
  process.exit(1);
}
