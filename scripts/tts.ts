// Operator CLI for the TTS service: `npm run tts -- speakers`, `npm run tts -- say "text" --speaker <id|name> --out f`.
// Reads TTS_BASE_URL, TTS_API_KEY, TTS_API_FORM from the environment or .env. Errors: one line, exit 1 (2 for usage).
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import dotenv from 'dotenv';
import { createLogger, LOG_LEVELS, type LogLevel } from '../src/log.ts';
import {
  createTtsClient,
  isUuid,
  parseTtsConfig,
  type Speaker,
  type TtsClient,
  TtsError,
} from '../src/tts/index.ts';

const USAGE = `Usage:
  npm run tts -- speakers
  npm run tts -- say "text" --speaker <id or name> [--out file] [--temperature 0.5-2.0]
Options: --verbose logs each HTTP exchange to standard error.`;

class UsageError extends Error {}

async function main(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      speaker: { type: 'string', short: 's' },
      out: { type: 'string', short: 'o' },
      temperature: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }

  dotenv.config({ quiet: true });
  const config = parseTtsConfig(process.env);
  if (!config.ok) throw new Error(`configuration: ${config.problems.join(' ')}`);
  const envLevel = process.env.LOG_LEVEL as LogLevel | undefined;
  const level: LogLevel = values.verbose
    ? 'debug'
    : envLevel && LOG_LEVELS.includes(envLevel)
      ? envLevel
      : 'error';
  const logger = createLogger({ level, secrets: [config.value.apiKey] });
  const client = createTtsClient({ ...config.value, logger });
  try {
    switch (command) {
      case 'speakers':
        if (rest.length > 0) throw new UsageError('speakers takes no arguments');
        printSpeakers(await client.listSpeakers());
        return 0;
      case 'say': {
        const text = rest.join(' ');
        if (text.trim() === '') throw new UsageError('say needs the text to speak');
        if (values.speaker === undefined) throw new UsageError('say needs --speaker <id or name>');
        const temperature = values.temperature === undefined ? undefined : Number(values.temperature);
        if (temperature !== undefined && Number.isNaN(temperature))
          throw new UsageError('--temperature must be a number');
        const out = values.out ?? (config.value.form === 'variant' ? 'tts-output.wav' : 'tts-output.ogg');
        await say(client, { text, speaker: values.speaker, out, temperature });
        return 0;
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } finally {
    await client.close();
  }
}

async function say(
  client: TtsClient,
  options: { text: string; speaker: string; out: string; temperature: number | undefined },
): Promise<void> {
  const speakerId = await resolveSpeaker(client, options.speaker);
  const result = await client.generate({
    text: options.text,
    speakerId,
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
  });
  try {
    await pipeline(result.audio, createWriteStream(options.out));
  } catch (error) {
    // A half-written file would play as if it were whole.
    await rm(options.out, { force: true });
    throw error;
  }
  const money = (usd: number | undefined): string => (usd === undefined ? 'unknown' : `$${usd.toFixed(6)}`);
  console.log(
    [
      `Wrote ${options.out} (${result.format}, ${result.sampleRate ?? 'unknown'} Hz)`,
      `duration ${result.durationS === undefined ? 'unknown' : `${result.durationS.toFixed(2)} s`}`,
      `cost ${money(result.costUsd)}`,
      `balance ${money(result.balanceUsd)}`,
      ...(result.requestId === undefined ? [] : [`request ${result.requestId}`]),
    ].join(', '),
  );
}

/** A speaker id from an id or a (case-insensitive) name; an unlisted UUID is passed through for the service to judge. */
async function resolveSpeaker(client: TtsClient, wanted: string): Promise<string> {
  const speakers = await client.listSpeakers();
  const byId = speakers.find((speaker) => speaker.id.toLowerCase() === wanted.toLowerCase());
  if (byId !== undefined) return byId.id;
  const byName = speakers.filter((speaker) => speaker.name.toLowerCase() === wanted.trim().toLowerCase());
  const [only] = byName;
  if (byName.length === 1 && only !== undefined) return only.id;
  if (byName.length > 1)
    throw new Error(
      `several speakers are named "${wanted}"; use an id: ${byName.map((s) => s.id).join(', ')}`,
    );
  if (isUuid(wanted)) return wanted;
  throw new Error(`no speaker is named "${wanted}"; run "npm run tts -- speakers" to list them`);
}

function printSpeakers(speakers: readonly Speaker[]): void {
  const rows = speakers.map((speaker) => [
    speaker.id,
    speaker.name,
    speaker.voiceKey,
    speaker.gender ?? '-',
    speaker.languages === null ? 'all' : speaker.languages.join(',') || '-',
  ]);
  const header = ['ID', 'NAME', 'VOICE KEY', 'GENDER', 'LANGUAGES'];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  console.log([line(header), ...rows.map(line)].join('\n'));
  console.log(`${speakers.length} speaker${speakers.length === 1 ? '' : 's'}`);
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (error instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
    console.error(`tts: ${(error as Error).message}\n${USAGE}`);
    process.exitCode = 2;
  } else {
    const message = error instanceof Error ? error.message : String(error);
    const code = error instanceof TtsError ? ` [${error.code}]` : '';
    console.error(`tts: ${message.split('\n')[0]}${code}`);
    process.exitCode = 1;
  }
}
