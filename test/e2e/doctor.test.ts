import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PermissionFlagsBits } from 'discord.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { commandBodies } from '../../commands/index.ts';
import { type DiscordEmulator, type Guild, startDiscordEmulator } from '../../emulators/discord/index.ts';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { createAutoReadStore } from '../../src/autoread/settings.ts';
import { createBudgetStore } from '../../src/budget/index.ts';
import { createCacheStore } from '../../src/cache/index.ts';
import { parseConfig } from '../../src/config.ts';
import { createMemberStore } from '../../src/members/index.ts';
import {
  blocksSpeaking,
  type DoctorCheck,
  doctorLogin,
  formatDoctorReport,
  runDoctor,
} from '../../src/ops/index.ts';
import { createShardLeases } from '../../src/shard/lease.ts';
import { createSettingsStore, openDatabase } from '../../src/storage/index.ts';
import { createTtsClient } from '../../src/tts/index.ts';
import { freePort } from '../support/net.ts';
import { createDatabase } from '../support/postgres.ts';
import { heraldEnv } from './harness.ts';

// `npm run doctor` on the emulators: a good setup is all ✓; each fault gives its ✗ and its fix line.

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const GONE_VOICE = '9f9f9f9f-0000-4000-8000-000000000009';
const cluster = inject('postgres');

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
    body: JSON.stringify(commandBodies({ userInstall: false })),
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
      commands: commandBodies({ userInstall: false }),
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
      'Memory allocator',
      'Discord token',
      'Application id',
      'Message Content intent',
      'Slash commands',
      'Permissions: Doctor Server',
      'TTS key',
      'Database',
      'Stored voices',
      'Budget',
      'Shards running',
    ]);
    expect(checks.at(-1)?.detail).toBe('none: no Herald runs on this database now');
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

  it('says which Herald runs the database’s shards, and that another SHARD_COUNT keeps npm start waiting', async () => {
    const db = openDatabase({ kind: 'sqlite', path: dbPath });
    const other = await createShardLeases(db, { count: 8, ids: [3], host: 'machine-b', pid: 12 });
    expect(await other.claim()).toEqual([]);
    try {
      const { checks } = await doctor();
      expect(failed(checks)).toEqual([
        expect.objectContaining({
          name: 'Shards running',
          blocks: false,
          detail:
            'shard 3 of 8 on machine-b, pid 12: SHARD_COUNT=8 there, 1 here, so npm start here would wait until they stop',
          fix: expect.stringMatching(/same numeric SHARD_COUNT/),
        }),
      ]);
      // The same count: a process here would be its standby, which is no fault.
      const same = await doctor({ SHARD_COUNT: '8', SHARD_IDS: '3' });
      expect(same.checks.find((check) => check.name === 'Shards running')).toMatchObject({
        status: 'ok',
        detail: expect.stringMatching(
          /^shard 3 of 8 on machine-b, pid 12; npm start here would wait for them/,
        ),
      });
    } finally {
      await other.release();
      await db.close();
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

/**
 * A loopback server that answers every PostgreSQL startup with one ErrorResponse ('E': severity, SQLSTATE,
 * message), as a server refusing the login does; the throwaway cluster trusts every login, so it cannot.
 */
async function refusingPostgres(sqlState: string, message: string): Promise<Server> {
  const server = createServer((socket) => {
    socket.once('data', () => {
      const fields = Buffer.from(`SFATAL\0C${sqlState}\0M${message}\0\0`);
      const head = Buffer.alloc(5);
      head.write('E');
      head.writeInt32BE(fields.length + 4, 1);
      socket.end(Buffer.concat([head, fields]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

const describePg = 'url' in cluster ? describe : describe.skip;
if ('skipped' in cluster) {
  describe.skip(`npm run doctor on PostgreSQL — skipped: ${cluster.skipped}`, () => {
    it('checks a PostgreSQL database', () => {});
  });
}

describePg('npm run doctor on PostgreSQL', () => {
  const adminUrl = (cluster as { url: string }).url;
  let pgUrl: string;

  beforeAll(async () => {
    // As a running Herald leaves it: every component migrated, a balance seen, an auto-read channel bound.
    pgUrl = await createDatabase(adminUrl);
    const db = openDatabase({ kind: 'postgres', url: pgUrl, poolSize: 2 });
    try {
      await createSettingsStore(db);
      await createMemberStore(db);
      await createCacheStore(db);
      const bound = guild.addTextChannel('read-aloud-pg');
      await (await createAutoReadStore(db)).bindChannel(guild.id, bound.id, true);
      const budget = await createBudgetStore(db);
      await budget.saveAccount({ ...(await budget.account()), balanceUsd: 9.5, balanceSeenAt: Date.now() });
    } finally {
      await db.close();
    }
  });

  /** Runs `change` on the test's database, then closes it. */
  async function onDatabase(
    change: (db: ReturnType<typeof openDatabase>) => Promise<unknown>,
  ): Promise<void> {
    const db = openDatabase({ kind: 'postgres', url: pgUrl, poolSize: 1 });
    try {
      await change(db);
    } finally {
      await db.close();
    }
  }

  it('is all ✓ on a good database, reading it through DATABASE_URL', async () => {
    const { checks, report } = await doctor({ DATABASE_URL: pgUrl });
    expect(failed(checks)).toEqual([]);
    expect(checks.find((check) => check.name === 'Database')?.detail).toBe(
      `${pgUrl}: reachable, migrations current`,
    );
    expect(checks.find((check) => check.name === 'Budget')?.detail).toMatch(/^last balance \$9\.50 /);
    expect(checks.find((check) => check.name === 'Permissions: Doctor Server')?.detail).toMatch(
      /, 1 auto-read channels$/,
    );
    expect(report).toContain('All good: Herald can speak.');
  });

  it('says an unreachable server blocks Herald, with a fix, and never shows the password', async () => {
    const password = 'pg-Secret-7f3a9c2e51';
    const url = `postgres://herald:${password}@127.0.0.1:${await freePort()}/herald`;
    const { checks, report } = await doctor({ DATABASE_URL: url });
    expect(failed(checks)).toEqual([
      expect.objectContaining({
        name: 'Database',
        blocks: true,
        detail: expect.stringContaining(`${url.replace(`:${password}`, '')} cannot be reached`),
        fix: expect.stringMatching(/host and port in DATABASE_URL/),
      }),
    ]);
    expect(blocksSpeaking(checks)).toBe(true);
    expect(report).not.toContain(password);

    const env = { ...process.env, ...heraldEnv(discord, tts, dbPath), DATABASE_URL: url };
    const failure = await run('node', ['scripts/doctor.ts'], { cwd: ROOT, env }).then(
      () => undefined,
      (error: { code?: number; stdout?: string; stderr?: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stdout).toMatch(
      /✗ Database +postgres:\/\/herald@127\.0\.0\.1:\d+\/herald cannot be reached.*\n +fix: /,
    );
    expect(failure?.stdout).not.toContain(password);
    expect(failure?.stderr).not.toContain(password);
  });

  it('says the server refused the login, pointing at the user and password', async () => {
    const password = 'pg-Wrong-0b1c2d3e4f';
    const server = await refusingPostgres('28P01', 'password authentication failed for user "herald"');
    try {
      const { port } = server.address() as AddressInfo;
      const { checks, report } = await doctor({
        DATABASE_URL: `postgres://herald:${password}@127.0.0.1:${port}/herald`,
      });
      expect(failed(checks)).toEqual([
        expect.objectContaining({
          name: 'Database',
          blocks: true,
          detail: `postgres://herald@127.0.0.1:${port}/herald refused the login: password authentication failed for user "herald"`,
          fix: expect.stringMatching(/user name and password in DATABASE_URL/),
        }),
      ]);
      expect(report).not.toContain(password);
    } finally {
      server.close();
    }
  });

  it('says the database is missing and how to create it', async () => {
    const url = new URL(adminUrl);
    url.pathname = '/herald_never_created';
    const { checks } = await doctor({ DATABASE_URL: url.toString() });
    expect(failed(checks)).toEqual([
      expect.objectContaining({
        name: 'Database',
        blocks: true,
        detail: expect.stringContaining('"herald_never_created" does not exist'),
        fix: expect.stringContaining('createdb herald_never_created'),
      }),
    ]);
  });

  it('takes a database Herald never started on as one it migrates at start', async () => {
    const { checks } = await doctor({ DATABASE_URL: await createDatabase(adminUrl) });
    expect(failed(checks)).toEqual([]);
    expect(checks.find((check) => check.name === 'Database')?.detail).toMatch(
      /reachable, no Herald tables yet/,
    );
  });

  it('finds tables written by a newer Herald', async () => {
    await onDatabase((db) =>
      db.run("UPDATE schema_migrations SET version = version + 1 WHERE component = 'budget'"),
    );
    try {
      const { checks } = await doctor({ DATABASE_URL: pgUrl });
      expect(failed(checks)).toEqual([
        expect.objectContaining({
          name: 'Database',
          blocks: true,
          detail: expect.stringMatching(/budget tables .*newer Herald/),
        }),
      ]);
    } finally {
      await onDatabase((db) =>
        db.run("UPDATE schema_migrations SET version = version - 1 WHERE component = 'budget'"),
      );
    }
  });

  it('finds a stored voice no longer offered, a balance under the floor and a vanished auto-read channel', async () => {
    const member = guild.addMember({ name: 'Pat Postgres' });
    await onDatabase(async (db) => {
      await (await createSettingsStore(db)).setMemberSpeaker(guild.id, member.id, GONE_VOICE);
      await (await createAutoReadStore(db)).bindChannel(guild.id, '123456789012345678', true);
    });
    try {
      const { checks } = await doctor({ DATABASE_URL: pgUrl, BUDGET_FLOOR_USD: '20' });
      expect(failed(checks)).toEqual([
        expect.objectContaining({
          name: 'Permissions: Doctor Server',
          detail: 'auto-read channel 123456789012345678 no longer exists',
        }),
        expect.objectContaining({
          name: 'Stored voices',
          blocks: false,
          detail: expect.stringContaining(`a member's voice in Doctor Server (${GONE_VOICE})`),
        }),
        expect.objectContaining({
          name: 'Budget',
          blocks: true,
          detail: expect.stringMatching(/last balance \$9\.50 .*under the floor \$20\.00/),
        }),
      ]);
    } finally {
      await onDatabase(async (db) => {
        await (await createSettingsStore(db)).setMemberSpeaker(guild.id, member.id, null);
        await (await createAutoReadStore(db)).bindChannel(guild.id, '123456789012345678', false);
      });
    }
  });
});
