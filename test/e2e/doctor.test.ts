import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PermissionFlagsBits } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commands } from '../../commands/index.ts';
import { type DiscordEmulator, type Guild, startDiscordEmulator } from '../../emulators/discord/index.ts';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { createAutoReadStore } from '../../src/autoread/settings.ts';
import { createBudgetStore } from '../../src/budget/index.ts';
import { parseConfig } from '../../src/config.ts';
import {
  blocksSpeaking,
  type DoctorCheck,
  doctorLogin,
  formatDoctorReport,
  runDoctor,
} from '../../src/ops/index.ts';
import { createSettingsStore, openDatabase } from '../../src/storage/index.ts';
import { createTtsClient } from '../../src/tts/index.ts';
import { heraldEnv } from './harness.ts';

// `npm run doctor` on the emulators: a good setup is all ✓; each fault gives its ✗ and its fix line.

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const GONE_VOICE = '9f9f9f9f-0000-4000-8000-000000000009';

let discord: DiscordEmulator;
let tts: TtsEmulator;
let guild: Guild;
let dataDir: string;
let dbPath: string;

/** Registers Herald's commands as `npm run deploy-commands` does. */
async function deployCommands(emulator: DiscordEmulator): Promise<void> {
  const response = await fetch(`${emulator.restUrl}/v10/applications/${emulator.applicationId}/commands`, {
    method: 'PUT',
    headers: { authorization: `Bot ${emulator.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(commands.map((command) => command.data.toJSON())),
  });
  expect(response.status).toBe(200);
}

function setupServer(emulator: DiscordEmulator): Guild {
  const created = emulator.createGuild({ name: 'Doctor Server' });
  created.addTextChannel('general');
  created.addVoiceChannel('Lounge');
  return created;
}

beforeAll(async () => {
  [discord, tts] = await Promise.all([startDiscordEmulator(), startTtsEmulator()]);
  guild = setupServer(discord);
  await deployCommands(discord);
  dataDir = mkdtempSync(join(tmpdir(), 'herald-doctor-'));
  dbPath = join(dataDir, 'herald.sqlite');
  // The database as a running Herald leaves it: migrated, a balance seen, an auto-read channel bound.
  const db = openDatabase({ kind: 'sqlite', path: dbPath });
  await createSettingsStore(db);
  const general = guild.addTextChannel('read-aloud');
  await (await createAutoReadStore(db)).bindChannel(guild.id, general.id, true);
  const budget = await createBudgetStore(db);
  await budget.saveAccount({ ...(await budget.account()), balanceUsd: 9.5, balanceSeenAt: Date.now() });
  await db.close();
});
afterAll(async () => {
  await Promise.all([discord?.close(), tts?.close()]);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function doctor(
  overrides: Record<string, string> = {},
  emulator: DiscordEmulator = discord,
  cacheDir?: string,
): Promise<{ checks: DoctorCheck[]; report: string }> {
  const parsed = parseConfig({ ...heraldEnv(emulator, tts, dbPath), ...overrides });
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  const config = parsed.value;
  const client = createTtsClient({ ...config.tts, retry: { maxRetries: 0 } });
  try {
    const checks = await runDoctor({
      config,
      commands: commands.map((command) => command.data.toJSON()),
      tts: client,
      login: () => doctorLogin(config),
      cacheDir,
    });
    return { checks, report: formatDoctorReport(checks) };
  } finally {
    await client.close();
  }
}

const failed = (checks: readonly DoctorCheck[]) => checks.filter((check) => check.status === 'fail');

describe('npm run doctor', () => {
  it('is all ✓ on a good setup, and `npm run doctor` exits 0', async () => {
    const { checks, report } = await doctor();
    expect(failed(checks)).toEqual([]);
    expect(checks.map((check) => check.name)).toEqual([
      'Node.js',
      'Opus addon',
      'Discord token',
      'Application id',
      'Message Content intent',
      'Slash commands',
      'Permissions: Doctor Server',
      'TTS key',
      'Database',
      'Stored voices',
      'Budget',
    ]);
    expect(report).toContain('All good: Herald can speak.');
    expect(report).not.toContain('✗');

    const env = { ...process.env, ...heraldEnv(discord, tts, dbPath) };
    const { stdout } = await run('node', ['scripts/doctor.ts'], { cwd: ROOT, env });
    expect(stdout).toContain('✓ Discord token');
    expect(stdout).toContain('All good: Herald can speak.');
    expect(stdout).not.toContain(discord.token);
    expect(stdout).not.toContain(tts.apiKey);
  });

  it('says the token is refused, how to fix it, and `npm run doctor` exits 1', async () => {
    const wrong = `${'N'.repeat(24)}.${'a'.repeat(6)}.${'b'.repeat(38)}`;
    const { checks } = await doctor({ DISCORD_TOKEN: wrong });
    expect(failed(checks)).toEqual([
      expect.objectContaining({
        name: 'Discord token',
        blocks: true,
        fix: expect.stringMatching(/Reset Token/),
      }),
    ]);
    expect(blocksSpeaking(checks)).toBe(true);

    const env = { ...process.env, ...heraldEnv(discord, tts, dbPath), DISCORD_TOKEN: wrong };
    const failure = await run('node', ['scripts/doctor.ts'], { cwd: ROOT, env }).then(
      () => undefined,
      (error: { code?: number; stdout?: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stdout).toMatch(
      /✗ Discord token +Discord refused DISCORD_TOKEN \(401\)\n +fix: .*Reset Token/,
    );
    expect(failure?.stdout).not.toContain(wrong);
  });

  it('finds a missing Message Content intent', async () => {
    const noIntent = await startDiscordEmulator({ applicationFlags: 0 });
    try {
      setupServer(noIntent);
      await deployCommands(noIntent);
      const { checks } = await doctor({}, noIntent);
      expect(failed(checks)).toEqual([
        expect.objectContaining({
          name: 'Message Content intent',
          blocks: true,
          fix: expect.stringMatching(/enable Message Content Intent/),
        }),
      ]);
    } finally {
      await noIntent.close();
    }
  });

  it('finds a voice channel where Herald may not speak', async () => {
    const quiet = guild.addVoiceChannel('Quiet Room', {
      deny: { botPermissions: PermissionFlagsBits.Speak },
    });
    try {
      const { checks, report } = await doctor();
      expect(failed(checks)).toEqual([
        expect.objectContaining({
          name: 'Permissions: Doctor Server',
          blocks: true,
          detail: '🔊Quiet Room lacks Speak',
          fix: expect.stringMatching(/Speak/),
        }),
      ]);
      expect(report).toMatch(/✗ Permissions: Doctor Server +🔊Quiet Room lacks Speak\n +fix: /);
    } finally {
      guild.deleteChannel(quiet);
    }
  });

  it('finds a TTS key the service refuses', async () => {
    const { checks } = await doctor({ TTS_API_KEY: `ttsemu_live_${'0'.repeat(32)}` });
    expect(failed(checks)).toEqual([
      expect.objectContaining({ name: 'TTS key', blocks: true, fix: expect.stringMatching(/TTS_API_KEY/) }),
    ]);
  });

  it('finds a stored voice the service no longer offers, which does not stop Herald', async () => {
    const db = openDatabase({ kind: 'sqlite', path: dbPath });
    const settings = await createSettingsStore(db);
    await settings.setGuildSpeaker(guild.id, GONE_VOICE);
    await db.close();
    try {
      const { checks, report } = await doctor();
      expect(failed(checks)).toEqual([
        expect.objectContaining({
          name: 'Stored voices',
          blocks: false,
          detail: expect.stringContaining(`Doctor Server's voice (${GONE_VOICE})`),
          fix: expect.stringMatching(/\/voice-set/),
        }),
      ]);
      expect(blocksSpeaking(checks)).toBe(false);
      expect(report).toContain('Herald can speak; 1 thing to fix.');
    } finally {
      const again = openDatabase({ kind: 'sqlite', path: dbPath });
      await (await createSettingsStore(again)).setGuildSpeaker(guild.id, null);
      await again.close();
    }
  });

  it('finds the last balance under the floor', async () => {
    const { checks } = await doctor({ BUDGET_FLOOR_USD: '20' });
    expect(failed(checks)).toEqual([
      expect.objectContaining({
        name: 'Budget',
        blocks: true,
        detail: expect.stringMatching(/last balance \$9\.50 .*under the floor \$20\.00/),
        fix: expect.stringMatching(/Top up/),
      }),
    ]);
  });

  it('checks the cache directory when one is configured', async () => {
    const cache = join(dataDir, 'cache');
    mkdirSync(cache);
    writeFileSync(join(cache, 'one.ogg'), Buffer.alloc(2048));
    const good = await doctor({}, discord, cache);
    expect(good.checks.at(-1)).toMatchObject({
      name: 'Cache directory',
      status: 'ok',
      detail: expect.stringMatching(/writable, 0\.0 MiB/),
    });
    const notADirectory = join(cache, 'one.ogg', 'below');
    const bad = await doctor({}, discord, notADirectory);
    expect(failed(bad.checks)).toEqual([
      expect.objectContaining({
        name: 'Cache directory',
        blocks: false,
        fix: expect.stringContaining('CACHE_DIR'),
      }),
    ]);
  });

  it('lists every configuration problem, and `npm run doctor` exits 1 without checking further', async () => {
    const env = {
      ...process.env,
      ...heraldEnv(discord, tts, dbPath),
      TTS_BASE_URL: 'not a url',
      DISCORD_TOKEN: '',
    };
    const failure = await run('node', ['scripts/doctor.ts'], { cwd: ROOT, env }).then(
      () => undefined,
      (error: { code?: number; stdout?: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stdout).toMatch(/✗ Configuration +DISCORD_TOKEN is missing/);
    expect(failure?.stdout).toMatch(/✗ Configuration +TTS_BASE_URL/);
    expect(failure?.stdout).not.toContain(tts.apiKey);
  });
});
