import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DiscordEmulator, startDiscordEmulator } from '../../emulators/discord/index.ts';
import { trustedTestCertificate } from '../../emulators/discord/tls.ts';
import { expectedDurationMs, startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { run } from '../support/process.ts';
import { heraldEnv } from './harness.ts';

// Herald as an operator runs it: `npm start` and `npm run deploy-commands` as real processes.

const ROOT = join(import.meta.dirname, '..', '..');
const INDEX = join(ROOT, 'src', 'index.ts');
const DEPLOY = join(ROOT, 'scripts', 'deploy-commands.ts');

let discord: DiscordEmulator;
let tts: TtsEmulator;
let dataDir: string;
beforeAll(async () => {
  [discord, tts] = await Promise.all([startDiscordEmulator(), startTtsEmulator()]);
  dataDir = mkdtempSync(join(tmpdir(), 'herald-proc-data-'));
});
afterAll(async () => {
  await Promise.all([discord?.close(), tts?.close()]);
  rmSync(dataDir, { recursive: true, force: true });
});

const goodEnv = () => heraldEnv(discord, tts, join(dataDir, 'herald.sqlite'));

describe('npm start', () => {
  it('refuses bad configuration with one message listing every problem, exit code 1 and no stack trace', async () => {
    const secretKey = 'not-the-right-shape-secret-1234567890';
    const { done } = run(INDEX, [], { TTS_API_KEY: secretKey, LOG_LEVEL: 'chatty' });
    const { code, output } = await done;
    expect(code).toBe(1);
    expect(output).toMatch(/^Herald cannot start; fix the configuration:/);
    for (const name of [
      'DISCORD_TOKEN',
      'DISCORD_APPLICATION_ID',
      'TTS_BASE_URL',
      'TTS_API_KEY',
      'LOG_LEVEL',
    ]) {
      expect(output).toContain(`  - ${name}`);
    }
    expect(output).not.toMatch(/\bat .+:\d+:\d+/); // no stack frames
    expect(output).not.toContain(secretKey);
  });

  it('starts the sandbox when nothing is configured: one line with its address on 127.0.0.1, then the page', async () => {
    const sandbox = run(INDEX, [], { SANDBOX_PORT: '0' }, /Herald sandbox: open \S+/);
    const line =
      /Herald sandbox: open (http:\/\/127\.0\.0\.1:\d+\/) \(a local Discord, a local TTS service/.exec(
        await sandbox.seen,
      );
    expect(line).not.toBeNull();
    const page = await fetch(line?.[1] ?? '');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Herald sandbox</title>');
    sandbox.child.kill('SIGTERM');
    const { code, output } = await sandbox.done;
    expect(code).toBe(0);
    expect(output.trim().split('\n')).toHaveLength(1); // the one line, nothing else
  });

  it('says which variable to change when the sandbox’s port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const { code, output } = await run(INDEX, [], { SANDBOX_PORT: String(port) }).done;
      expect(code).toBe(1);
      expect(output).toContain(
        `Herald sandbox cannot start: port ${port} is in use; choose another with SANDBOX_PORT`,
      );
    } finally {
      taken.close();
    }
  });

  it('lists what to configure when nothing is and the installation has no sandbox (the container image)', async () => {
    // The image copies src/, commands/ and node_modules but neither sandbox/ nor emulators/.
    const image = mkdtempSync(join(tmpdir(), 'herald-image-'));
    try {
      cpSync(join(ROOT, 'src'), join(image, 'src'), { recursive: true });
      cpSync(join(ROOT, 'commands'), join(image, 'commands'), { recursive: true });
      cpSync(join(ROOT, 'package.json'), join(image, 'package.json'));
      symlinkSync(join(ROOT, 'node_modules'), join(image, 'node_modules'));
      const { code, output } = await run(join(image, 'src', 'index.ts'), [], {}).done;
      expect(code).toBe(1);
      expect(output).toMatch(/^Herald cannot start; fix the configuration:/);
      expect(output).toContain('  - DISCORD_TOKEN');
      expect(output).not.toMatch(/ERR_MODULE_NOT_FOUND|\bat .+:\d+:\d+/);
    } finally {
      rmSync(image, { recursive: true, force: true });
    }
  });

  it('never falls back to the sandbox when some configuration is there', async () => {
    const { code, output } = await run(INDEX, [], { DISCORD_REST_URL: 'http://127.0.0.1:1/api' }).done;
    expect(code).toBe(1);
    expect(output).toMatch(/^Herald cannot start; fix the configuration:/);
    expect(output).not.toContain('sandbox');
  });

  it('starts as one process with the shard variables set but empty, as a .env copied from .env.example has them', async () => {
    const guild = discord.createGuild({ name: 'Empty Shards Test' });
    guild.addTextChannel('general');
    const bot = run(
      INDEX,
      [],
      { ...goodEnv(), SHARD_COUNT: '', SHARD_IDS: '', SHARD_PROCESSES: '' },
      /"msg":"logged in"/,
    );
    const first = await Promise.race([bot.seen, bot.done.then((r) => r.output)]);
    expect(first).toMatch(/"msg":"logged in"/);
    bot.child.kill('SIGTERM');
    expect((await bot.done).code).toBe(0);
  });

  it('logs in, answers, shuts down cleanly on SIGTERM, and never prints the token or the key', async () => {
    const guild = discord.createGuild({ name: 'Process Test' });
    guild.addTextChannel('general');
    const member = guild.addMember({ name: 'Gil' });
    const bot = run(INDEX, [], goodEnv(), /"msg":"logged in"/);
    await bot.seen;
    await discord.untilReady();
    const reply = await discord.slash(member, 'voices');
    expect(reply.embeds[0]?.description).toContain('**Bella**');
    bot.child.kill('SIGTERM');
    const { code, output } = await bot.done;
    expect(code).toBe(0);
    expect(output).toMatch(/"msg":"shutting down"/);
    expect(output).not.toContain(discord.token);
    expect(output).not.toContain(tts.apiKey);
  });

  it('SIGTERM while the next utterance downloads: what was paid for is heard, then a clean exit', async () => {
    tts.configure({ speed: 1 }); // real-time streaming: the next utterance is still downloading
    const databasePath = join(dataDir, 'sigterm.sqlite');
    try {
      const guild = discord.createGuild({ name: 'Sigterm Test' });
      guild.addTextChannel('general');
      const voice = guild.addVoiceChannel('Voice');
      const member = guild.addMember({ name: 'Hal' });
      guild.joinVoice(member, voice);
      // The voice gateway's TLS certificate is the emulator's own: the child process is told to trust it.
      const caPath = join(dataDir, 'emulator-ca.pem');
      writeFileSync(caPath, (await trustedTestCertificate()).cert);
      const env = { ...heraldEnv(discord, tts, databasePath), NODE_EXTRA_CA_CERTS: caPath };
      const bot = run(INDEX, [], env, /"msg":"logged in"/);
      await bot.seen;
      await discord.untilReady();
      await discord.slash(member, 'speak', { text: 'The first thing said, long enough to hear.' });
      await discord.slash(member, 'speak', { text: 'And then the second thing, said right after.' });
      await vi.waitFor(() => expect(speechRows(databasePath)).toHaveLength(2), { timeout: 10_000 });
      bot.child.kill('SIGTERM');
      const { code, output } = await bot.done;
      expect(output).not.toMatch(/Unhandled 'error' event|uncaught/i);
      expect(code).toBe(0);
      // Both were paid for: the stop let them play out (within its bound) rather than waste the second.
      expect(speechRows(databasePath).map((row) => row.wasted)).toEqual([null, null]);
      const heard = await discord.voice(guild).untilSilent({ quietMs: 800 });
      expect(heard.soundMs).toBeGreaterThan(
        expectedDurationMs('The first thing said, long enough to hear.') +
          expectedDurationMs('And then the second thing, said right after.') -
          300,
      );
    } finally {
      tts.configure({ speed: 8 });
    }
  });
});

describe('npm start twice on one database', () => {
  it('the second waits, saying who runs the shard, and takes over at once when the first is killed', async () => {
    const guild = discord.createGuild({ name: 'Twice Test' });
    guild.addTextChannel('general');
    const member = guild.addMember({ name: 'Ida' });
    const env = heraldEnv(discord, tts, join(dataDir, 'twice.sqlite'));
    const first = run(INDEX, [], env, /"msg":"logged in"/);
    await first.seen;
    await discord.untilReady();
    const sessions = discord.gatewaySessions().length;
    // The second has an ops endpoint: while it stands by, it says so there.
    const second = run(INDEX, [], { ...env, METRICS_PORT: '0' });
    try {
      await second.until(/another Herald runs these shards/, 20_000);
      const holder = `shard 0 of 1 on ${hostname()}, pid ${first.child.pid}`;
      expect(second.output()).toContain(holder);
      await second.until(/"msg":"ops endpoint listening"/, 10_000);
      const standby = second
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"ops endpoint listening"'))
        .map((line) => (JSON.parse(line) as { url: string }).url)[0];
      expect(await (await fetch(`${standby}/healthz`)).json()).toMatchObject({
        status: 'ok',
        standingBy: true,
      });
      const readiness = await fetch(`${standby}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.json()).toEqual({
        ready: false,
        standingBy: true,
        detail: expect.stringContaining(holder),
      });
      // Waiting: no second gateway session, and one answer (the first's) to a command.
      expect(second.output()).not.toContain('"msg":"logged in"');
      expect(discord.gatewaySessions()).toHaveLength(sessions);
      expect((await discord.slash(member, 'voices')).embeds[0]?.description).toContain('**Bella**');

      first.child.kill('SIGKILL');
      await first.done;
      await second.until(/"msg":"logged in"/, 20_000);
      expect(second.output()).toContain('the shards are free: this process runs them now');
      // The standby endpoint gave way to the process's own.
      await expect(fetch(`${standby}/healthz`)).rejects.toThrow();
      expect(second.output().match(/"msg":"ops endpoint listening"/g)).toHaveLength(2);
      await discord.untilReady();
      expect((await discord.slash(member, 'voices')).embeds[0]?.description).toContain('**Bella**');
      second.child.kill('SIGTERM');
      expect((await second.done).code).toBe(0);
    } finally {
      for (const bot of [first, second]) if (bot.child.exitCode === null) bot.child.kill('SIGKILL');
    }
  });
});

/** The speech rows of the ledger, read straight from Herald's database file while it runs. */
function speechRows(databasePath: string): { wasted: string | null }[] {
  const db = new DatabaseSync(databasePath, { readOnly: true });
  try {
    return db.prepare("SELECT wasted FROM budget_ledger WHERE kind = 'speech' ORDER BY at, id").all() as {
      wasted: string | null;
    }[];
  } finally {
    db.close();
  }
}
describe('npm start under DAVE', () => {
  it('stays up through a DAVE proposal for a user never announced, and the next utterance is heard', async () => {
    // The child trusts the voice server's certificate the way an operator's machine would trust a CA.
    const caPath = join(dataDir, 'voice-ca.pem');
    writeFileSync(caPath, (await trustedTestCertificate()).cert);
    const guild = discord.createGuild({ name: 'DAVE Process Test' });
    guild.addTextChannel('general');
    const lounge = guild.addVoiceChannel('Lounge');
    const member = guild.addMember({ name: 'Hal' });
    guild.joinVoice(member, lounge);
    const bot = run(INDEX, [], { ...goodEnv(), NODE_EXTRA_CA_CERTS: caPath }, /"msg":"logged in"/);
    await bot.seen;
    await discord.untilReady();
    const capture = discord.voice(guild);
    await discord.slash(member, 'speak', { text: 'Before the fault.' });
    expect(
      (await capture.untilSilent({ quietMs: 300 })).hearing.listeners[member.id]?.decrypted,
    ).toBeGreaterThan(0);

    // Unpatched, @discordjs/voice throws UnexpectedUser from its WebSocket handler and the process exits.
    discord.faults.dave.proposeUnknownUser(guild);
    const recovered = new Promise<void>((resolve, reject) => {
      const check = setInterval(() => {
        if (bot.child.exitCode !== null) reject(new Error(`Herald exited with code ${bot.child.exitCode}`));
        else if (discord.daveGroup(guild)?.stats.invalidations && discord.daveGroup(guild)?.settled())
          resolve();
        else return;
        clearInterval(check);
      }, 20);
    });
    await recovered;
    capture.clear();
    await discord.slash(member, 'speak', { text: 'After the fault.' });
    const { hearing } = await capture.untilSilent({ quietMs: 300 });
    expect(hearing.e2ee).toBe(hearing.sent);
    expect(hearing.listeners[member.id]).toEqual({ decrypted: hearing.sent, failed: {} });
    expect(bot.child.exitCode).toBeNull();
    bot.child.kill('SIGTERM');
    expect((await bot.done).code).toBe(0);
  });
});

describe('npm run deploy-commands', () => {
  it('registers every command in one server, with Manage Server as /voice-set’s default permission', async () => {
    const guild = discord.createGuild({ name: 'Deploy Test' });
    const { code, output } = await run(DEPLOY, ['--guild', guild.id], goodEnv()).done;
    expect(output).toMatch(/Registered 16 commands in server/);
    expect(code).toBe(0);
    const registered = discord.commands.guild.get(guild.id) ?? [];
    expect(registered.map((command) => command.name).sort()).toEqual(
      [
        'autoread',
        'block',
        'budget',
        'dictionary',
        'forget-me',
        'join',
        'leave',
        'nickname',
        'Read aloud',
        'skip',
        'speak',
        'stop',
        'unblock',
        'voice-set',
        'voice-tune',
        'voices',
      ].sort(),
    );
    const voiceSet = registered.find((command) => command.name === 'voice-set');
    expect(voiceSet?.default_member_permissions).toBe(String(1 << 5)); // Manage Server
    expect(registered.every((command) => JSON.stringify(command.contexts) === '[0]')).toBe(true);
    // USER_INSTALL is off by default: nothing is offered to members who install Herald to their account.
    expect(registered.every((command) => JSON.stringify(command.integration_types) === '[0]')).toBe(true);
    expect(registered.find((command) => command.name === 'Read aloud')?.type).toBe(3);
  });

  it('with USER_INSTALL=on, offers /speak alone to members who install Herald to their account', async () => {
    const guild = discord.createGuild({ name: 'User Install Test' });
    const env = { ...goodEnv(), USER_INSTALL: 'on' };
    const { code, output } = await run(DEPLOY, ['--guild', guild.id], env).done;
    expect(output).toMatch(/Registered 16 commands in server \d+, for servers and user installs/);
    expect(code).toBe(0);
    const registered = discord.commands.guild.get(guild.id) ?? [];
    const offered = registered.filter((command) => JSON.stringify(command.integration_types) === '[0,1]');
    expect(offered.map((command) => [command.name, command.contexts])).toEqual([['speak', [0, 1, 2]]]);
    expect(
      registered.filter((command) => command.name !== 'speak').every((c) => c.contexts.length === 1),
    ).toBe(true);
  });

  it('registers globally, and refuses a malformed server id', async () => {
    expect((await run(DEPLOY, [], goodEnv()).done).code).toBe(0);
    expect(discord.commands.global.length).toBe(16);
    const refused = await run(DEPLOY, ['--guild', 'nope'], goodEnv()).done;
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(/--guild needs a numeric server id/);
  });

  it('takes --guild=<id> as a server, and refuses an unknown flag instead of registering globally', async () => {
    const guild = discord.createGuild({ name: 'Equals Test' });
    const globalBefore = discord.rest.filter((call) =>
      /\/applications\/\d+\/commands$/.test(call.path),
    ).length;
    const equals = await run(DEPLOY, [`--guild=${guild.id}`], goodEnv()).done;
    expect(equals.output).toMatch(/in server/);
    expect(discord.commands.guild.get(guild.id)?.length).toBe(16);
    const typo = await run(DEPLOY, ['--guid', guild.id], goodEnv()).done;
    expect(typo.code).toBe(1);
    expect(typo.output).toMatch(/Unknown option '--guid'/);
    expect(discord.rest.filter((call) => /\/applications\/\d+\/commands$/.test(call.path)).length).toBe(
      globalBefore,
    );
  });
});
