/**
 * `npm run sandbox` (and `npm start` with no Discord and no TTS configuration): Herald in a local Discord with a
 * local TTS service, played from a web page. SANDBOX_HOST (default 127.0.0.1) and SANDBOX_PORT (default 3000)
 * choose the page's address; TTS_BASE_URL with TTS_API_KEY make it use the real TTS service instead.
 */
import 'dotenv/config';
import { startSandbox } from './server.ts';

// Blank counts as unset, as in .env.example.
const port = Number(process.env.SANDBOX_PORT?.trim() || 3000);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error('Herald sandbox cannot start: SANDBOX_PORT must be a port number (0 picks a free one).');
  process.exit(1);
}
try {
  const sandbox = await startSandbox({
    host: process.env.SANDBOX_HOST?.trim() || '127.0.0.1',
    port,
    env: process.env,
  });
  const tts =
    sandbox.tts === 'real'
      ? 'the real TTS service (TTS_BASE_URL; real money, budget guard on)'
      : 'a local TTS service';
  console.log(
    `Herald sandbox: open ${sandbox.url} (a local Discord, ${tts}; no accounts needed). Ctrl+C stops it.`,
  );
  const stop = (): void => {
    sandbox.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  const inUse = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
  console.error(
    inUse
      ? `Herald sandbox cannot start: port ${port} is in use; choose another with SANDBOX_PORT (0 picks a free one).`
      : `Herald sandbox cannot start: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
}
