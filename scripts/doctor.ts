// `npm run doctor`: checks, without paying, everything that stops Herald from speaking, and says how to fix each.
// Reads the same environment (and .env) as `npm start`; CACHE_DIR is checked when set. Exit code 1 when something
// blocks speaking.
import 'dotenv/config';
import { commandBodies } from '../commands/index.ts';
import { parseConfig } from '../src/config.ts';
import { blocksSpeaking, doctorLogin, formatDoctorReport, runDoctor } from '../src/ops/index.ts';
import { defaultShardProcesses } from '../src/shard/config.ts';
import { machineShape } from '../src/shard/machine.ts';
import { createTtsClient } from '../src/tts/index.ts';

const parsed = parseConfig(process.env);
if (!parsed.ok) {
  const rows = parsed.problems.map((problem) => `✗ Configuration  ${problem}`);
  console.log(`${rows.join('\n')}\n  fix: set these in the environment or in .env (see .env.example).\n`);
  process.exit(1);
}
const config = parsed.value;
const machine = machineShape();
const tts = createTtsClient({ ...config.tts, retry: { maxRetries: 1 } });
try {
  const checks = await runDoctor({
    config,
    commands: commandBodies({ userInstall: config.userInstall.enabled }),
    tts,
    login: () => doctorLogin(config),
    // The folder the audio cache really uses (AUDIO_CACHE_DIR, or beside the database), unless it is turned off.
    cacheDir: config.cache.maxBytes > 0 ? config.cache.dir : undefined,
    processes: { shardProcesses: defaultShardProcesses(process.env, machine), ...machine },
  });
  console.log(formatDoctorReport(checks));
  process.exitCode = blocksSpeaking(checks) ? 1 : 0;
} finally {
  await tts.close();
}
