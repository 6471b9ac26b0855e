import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { claimOf } from '../shard/lease.ts';
import { type Speaker, TtsAuthenticationError, type TtsClient } from '../tts/index.ts';
import { allocatorCheck } from './allocator.ts';
import { type DoctorCheck, messageOf } from './doctor-check.ts';
import { autoReadChannels, databaseChecks, readDatabase } from './doctor-database.ts';
import { type DiscordDoctorContext, discordChecks } from './doctor-discord.ts';
import { type ProcessPlan, processesCheck } from './doctor-processes.ts';
import { shardsRunningCheck } from './doctor-shards.ts';

export type { DoctorCheck } from './doctor-check.ts';

/**
 * `npm run doctor`: everything that stops Herald from speaking, checked without a paid call, each failure with one
 * line saying how to fix it. The checks take their world as arguments (config, HTTP, a gateway login, the
 * database's URL), so tests run them against the emulators and a throwaway PostgreSQL. Discord's checks live in
 * doctor-discord.ts, the database's in doctor-database.ts.
 */

/** What the doctor may use; the script builds it, tests pass emulator-backed parts. */
export interface DoctorContext extends DiscordDoctorContext {
  readonly tts: Pick<TtsClient, 'listSpeakers'>;
  /** The audio cache's folder (`AUDIO_CACHE_DIR`, or beside the database), when the cache is on. */
  readonly cacheDir?: string | undefined;
  readonly nodeVersion?: string;
  /** Loads the Opus addon and encodes one frame; throws when it cannot. */
  readonly loadOpus?: () => void;
  /** How many processes `npm start` runs on this machine; the row is left out without it. */
  readonly processes?: ProcessPlan;
}

const MIN_NODE: readonly [number, number] = [22, 12];
/** Runs every check, in the order of the report. Never throws: a check that cannot run is a failed row. */
export async function runDoctor(context: DoctorContext): Promise<DoctorCheck[]> {
  const { config } = context;
  const checks: DoctorCheck[] = [
    nodeCheck(context.nodeVersion ?? process.versions.node),
    opusCheck(context.loadOpus ?? loadOpus),
    allocatorCheck(),
    ...(context.processes ? [processesCheck(config.shards, context.processes)] : []),
  ];

  // Read first: the permission checks need the auto-read channels, the database rows need the servers' names.
  const database = await readDatabase(config);
  const discord = await discordChecks(context, autoReadChannels(database));
  checks.push(...discord.checks);

  let speakers: readonly Speaker[] | undefined;
  try {
    speakers = await context.tts.listSpeakers({ signal: AbortSignal.timeout(10_000) });
    checks.push({
      name: 'TTS key',
      status: 'ok',
      detail: `the service lists ${speakers.length} voices (${config.tts.baseUrl})`,
    });
  } catch (error) {
    checks.push(
      error instanceof TtsAuthenticationError
        ? {
            name: 'TTS key',
            status: 'fail',
            blocks: true,
            detail: `the TTS service refused TTS_API_KEY (${messageOf(error)})`,
            fix: 'Copy a live key from the TTS service dashboard into TTS_API_KEY.',
          }
        : {
            name: 'TTS key',
            status: 'fail',
            blocks: true,
            detail: `could not list voices at ${config.tts.baseUrl}: ${messageOf(error)}`,
            fix: 'Check TTS_BASE_URL (with its version path) and that the service is reachable from here.',
          },
    );
  }

  checks.push(...databaseChecks(config, database, speakers, discord.guilds));
  if (database.status === 'read') {
    // The shards npm start would claim here: every shard of the default shard processes when SHARD_COUNT is unset.
    const processes = context.processes?.shardProcesses;
    const claim = claimOf(
      processes === undefined ? config.shards : { count: processes, ids: undefined, managed: false },
    );
    checks.push(shardsRunningCheck(database.leases, claim, { host: hostname(), now: Date.now() }));
  }
  if (context.cacheDir !== undefined) checks.push(cacheCheck(context.cacheDir));
  return checks;
}

/** The report as text: one row per check, a fix line under each failure, and the verdict. */
export function formatDoctorReport(checks: readonly DoctorCheck[]): string {
  const width = Math.max(...checks.map((check) => check.name.length));
  const lines = checks.flatMap((check) => [
    `${check.status === 'ok' ? '✓' : '✗'} ${check.name.padEnd(width)}  ${check.detail}${check.status === 'fail' && !check.blocks ? ' (Herald still speaks)' : ''}`,
    ...(check.fix === undefined ? [] : [`  ${' '.repeat(width)}  fix: ${check.fix}`]),
  ]);
  const blocking = checks.filter((check) => check.status === 'fail' && check.blocks).length;
  const other = checks.filter((check) => check.status === 'fail' && !check.blocks).length;
  lines.push(
    '',
    blocking > 0
      ? `${blocking} problem${blocking === 1 ? ' stops' : 's stop'} Herald from speaking${other > 0 ? `, and ${other} more to fix` : ''}.`
      : other > 0
        ? `Herald can speak; ${other} thing${other === 1 ? '' : 's'} to fix.`
        : 'All good: Herald can speak.',
  );
  return `${lines.join('\n')}\n`;
}

/** True when a failure stops Herald from speaking: `npm run doctor` then exits 1. */
export function blocksSpeaking(checks: readonly DoctorCheck[]): boolean {
  return checks.some((check) => check.status === 'fail' && check.blocks === true);
}

function nodeCheck(version: string): DoctorCheck {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const ok = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
  return ok
    ? { name: 'Node.js', status: 'ok', detail: `${version} (needs ${MIN_NODE.join('.')} or newer)` }
    : {
        name: 'Node.js',
        status: 'fail',
        blocks: true,
        detail: `${version} is too old for @discordjs/voice (needs ${MIN_NODE.join('.')} or newer)`,
        fix: 'Run `npm run setup`, which brings Node 24 for the project, and start Herald with `npm start`.',
      };
}

function loadOpus(): void {
  const require = createRequire(import.meta.url);
  const { OpusEncoder } = require('@discordjs/opus') as {
    OpusEncoder: new (rate: number, channels: number) => { encode(pcm: Buffer): Buffer };
  };
  new OpusEncoder(48_000, 2).encode(Buffer.alloc(960 * 4));
}

function opusCheck(load: () => void): DoctorCheck {
  try {
    load();
    return { name: 'Opus addon', status: 'ok', detail: '@discordjs/opus loads and encodes' };
  } catch (error) {
    return {
      name: 'Opus addon',
      status: 'fail',
      blocks: true,
      detail: `@discordjs/opus does not load: ${messageOf(error).split('\n')[0]}`,
      fix: 'Run `npm run setup` (it compiles the addon for the Node that runs Herald).',
    };
  }
}

function cacheCheck(dir: string): DoctorCheck {
  try {
    mkdirSync(dir, { recursive: true });
    const probe = join(dir, `.doctor-${process.pid}`);
    writeFileSync(probe, 'ok');
    rmSync(probe);
    const bytes = sizeOf(dir);
    return {
      name: 'Cache directory',
      status: 'ok',
      detail: `${dir}: writable, ${(bytes / 1_048_576).toFixed(1)} MiB`,
    };
  } catch (error) {
    return {
      name: 'Cache directory',
      status: 'fail',
      blocks: false,
      detail: `${dir} is not writable: ${messageOf(error)}`,
      fix: `Create ${dir} and give the user running Herald write access (or point AUDIO_CACHE_DIR elsewhere, or turn the cache off with AUDIO_CACHE_MB=0).`,
    };
  }
}

function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? sizeOf(path) : statSync(path).size;
  }
  return total;
}
