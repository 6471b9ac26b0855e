import { once } from 'node:events';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  Client,
  Events,
  GatewayIntentBits,
  type GuildBasedChannel,
  PermissionFlagsBits,
  type PermissionResolvable,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import type { Config } from '../config.ts';
import { type Speaker, TtsAuthenticationError, type TtsClient } from '../tts/index.ts';
import { allocatorCheck } from './allocator.ts';
import type { DoctorCheck } from './doctor-check.ts';
import { autoReadChannels, databaseChecks, readDatabase } from './doctor-database.ts';
import { type ProcessPlan, processesCheck } from './doctor-processes.ts';

export type { DoctorCheck } from './doctor-check.ts';

/**
 * `npm run doctor`: everything that stops Herald from speaking, checked without a paid call, each failure with one
 * line saying how to fix it. The checks take their world as arguments (config, HTTP, a gateway login, the
 * database's URL), so tests run them against the emulators and a throwaway PostgreSQL. The database's checks live
 * in doctor-database.ts.
 */

/** What the doctor may use; the script builds it, tests pass emulator-backed parts. */
export interface DoctorContext {
  readonly config: Config;
  /** Herald's slash commands, as registered by `npm run deploy-commands`. */
  readonly commands: readonly RESTPostAPIChatInputApplicationCommandsJSONBody[];
  readonly tts: Pick<TtsClient, 'listSpeakers'>;
  /** Logs a discord.js client in (Guilds intent only: never a privileged one) and resolves once it is ready. */
  readonly login: () => Promise<Client<true>>;
  /** `fetch`, for Discord's REST API. */
  readonly fetch?: typeof fetch;
  /** The audio cache's folder (`AUDIO_CACHE_DIR`, or beside the database), when the cache is on. */
  readonly cacheDir?: string | undefined;
  readonly nodeVersion?: string;
  /** Loads the Opus addon and encodes one frame; throws when it cannot. */
  readonly loadOpus?: () => void;
  /** How many processes `npm start` runs on this machine; the row is left out without it. */
  readonly processes?: ProcessPlan;
}

const MIN_NODE: readonly [number, number] = [22, 12];
/** Application flags that mean the Message Content intent is enabled (full, or limited for unverified bots). */
const MESSAGE_CONTENT_FLAGS = (1 << 19) | (1 << 18);
const DISCORD_API = 'https://discord.com/api';

/**
 * Logs a discord.js client in with the Guilds intent only (no privileged intent, so a missing Message Content
 * intent cannot stop the doctor) and resolves once every server has arrived.
 * @throws when the login fails or takes longer than `timeoutMs`.
 */
export async function doctorLogin(config: Config, timeoutMs = 20_000): Promise<Client<true>> {
  const client = new Client({
    intents: [GatewayIntentBits.Guilds],
    ...(config.discord.restUrl ? { rest: { api: config.discord.restUrl } } : {}),
  });
  const ready = once(client, Events.ClientReady, { signal: AbortSignal.timeout(timeoutMs) });
  try {
    await client.login(config.discord.token);
    await ready;
  } catch (error) {
    await client.destroy();
    throw error;
  }
  if (!client.isReady()) throw new Error('the client is not ready');
  return client;
}

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

interface GuildFacts {
  readonly id: string;
  readonly name: string;
}

/** Token, application, intent, commands and per-server permissions. */
async function discordChecks(
  context: DoctorContext,
  autoRead: ReadonlyMap<string, readonly string[]>,
): Promise<{ checks: DoctorCheck[]; guilds: readonly GuildFacts[] | undefined }> {
  const { config } = context;
  const doFetch = context.fetch ?? fetch;
  const base = `${(config.discord.restUrl ?? DISCORD_API).replace(/\/+$/, '')}/v10`;
  const get = async (path: string): Promise<{ status: number; body: unknown }> => {
    const response = await doFetch(`${base}${path}`, {
      headers: { authorization: `Bot ${config.discord.token}` },
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, body };
  };
  const checks: DoctorCheck[] = [];

  let me: { status: number; body: unknown };
  try {
    me = await get('/users/@me');
  } catch (error) {
    checks.push({
      name: 'Discord token',
      status: 'fail',
      blocks: true,
      detail: `Discord's API is unreachable: ${messageOf(error)}`,
      fix: 'Check the network (and DISCORD_REST_URL, when a REST proxy is used).',
    });
    return { checks, guilds: undefined };
  }
  if (me.status === 401) {
    checks.push({
      name: 'Discord token',
      status: 'fail',
      blocks: true,
      detail: 'Discord refused DISCORD_TOKEN (401)',
      fix: 'In the developer portal, Bot → Reset Token, and put the new token in DISCORD_TOKEN.',
    });
    return { checks, guilds: undefined };
  }
  const user = me.body as { id?: string; username?: string; bot?: boolean } | undefined;
  if (me.status !== 200 || !user?.id) {
    checks.push({
      name: 'Discord token',
      status: 'fail',
      blocks: true,
      detail: `GET /users/@me answered ${me.status}`,
      fix: 'Try again later; if it persists, check Discord’s status page.',
    });
    return { checks, guilds: undefined };
  }
  checks.push({
    name: 'Discord token',
    status: 'ok',
    detail: `valid: bot ${user.username ?? '?'} (${user.id})`,
  });

  const app = await get('/applications/@me');
  const application = app.body as { id?: string; name?: string; flags?: number } | undefined;
  if (app.status !== 200 || !application?.id) {
    checks.push({
      name: 'Application',
      status: 'fail',
      blocks: true,
      detail: `GET /applications/@me answered ${app.status}`,
      fix: 'Check that DISCORD_TOKEN is a bot token of the application.',
    });
    return { checks, guilds: undefined };
  }
  checks.push(
    application.id === config.discord.applicationId
      ? { name: 'Application id', status: 'ok', detail: `${application.name ?? '?'} (${application.id})` }
      : {
          name: 'Application id',
          status: 'fail',
          blocks: true,
          detail: `DISCORD_APPLICATION_ID is ${config.discord.applicationId}, but the token belongs to ${application.name ?? '?'} (${application.id})`,
          fix: `Set DISCORD_APPLICATION_ID=${application.id} (General Information → Application ID).`,
        },
  );
  checks.push(
    ((application.flags ?? 0) & MESSAGE_CONTENT_FLAGS) !== 0
      ? { name: 'Message Content intent', status: 'ok', detail: 'enabled' }
      : {
          name: 'Message Content intent',
          status: 'fail',
          blocks: true,
          detail: 'not enabled: Discord refuses Herald’s gateway login (close 4014, disallowed intents)',
          fix: 'Developer portal → Bot → Privileged Gateway Intents → enable Message Content Intent, and save.',
        },
  );

  // Permissions come from the gateway, as Herald sees them; the doctor asks for no privileged intent.
  let client: Client<true>;
  try {
    client = await context.login();
  } catch (error) {
    checks.push({
      name: 'Gateway',
      status: 'fail',
      blocks: true,
      detail: `could not log in: ${messageOf(error)}`,
      fix: 'Check the token and the network; Discord may also be rate-limiting logins (try again in a minute).',
    });
    return { checks, guilds: undefined };
  }
  try {
    const guilds = [...client.guilds.cache.values()].map((guild) => ({ id: guild.id, name: guild.name }));
    checks.push(await commandChecks(context, get, guilds));
    checks.push(...permissionChecks(client, autoRead));
    return { checks, guilds };
  } finally {
    await client.destroy();
  }
}

/** The parts of a command definition a member sees; a difference means the registered one is stale. */
function signature(command: unknown): string {
  const shape = (item: unknown): unknown => {
    const { name, description, type, options } = item as {
      name?: string;
      description?: string;
      type?: number;
      options?: unknown[];
    };
    return [name, description ?? '', type ?? 1, (options ?? []).map(shape)];
  };
  return JSON.stringify(shape(command));
}

async function commandChecks(
  context: DoctorContext,
  get: (path: string) => Promise<{ status: number; body: unknown }>,
  guilds: readonly GuildFacts[],
): Promise<DoctorCheck> {
  const appId = context.config.discord.applicationId;
  const wanted = new Map(context.commands.map((command) => [command.name, signature(command)]));
  const global = await get(`/applications/${appId}/commands`);
  const globalList = Array.isArray(global.body) ? (global.body as { name: string }[]) : [];
  const missing: string[] = [];
  const stale = new Set<string>();
  const scopes: { label: string; list: { name: string }[] }[] = [{ label: 'global', list: globalList }];
  for (const guild of guilds) {
    const local = await get(`/applications/${appId}/guilds/${guild.id}/commands`);
    const list = Array.isArray(local.body) ? (local.body as { name: string }[]) : [];
    if (list.length > 0) scopes.push({ label: `in ${guild.name}`, list });
    const names = new Set([...globalList, ...list].map((command) => command.name));
    const lacking = [...wanted.keys()].filter((name) => !names.has(name));
    if (lacking.length > 0) missing.push(`${guild.name}: /${lacking.join(', /')}`);
  }
  if (guilds.length === 0) {
    const names = new Set(globalList.map((command) => command.name));
    const lacking = [...wanted.keys()].filter((name) => !names.has(name));
    if (lacking.length > 0) missing.push(`global: /${lacking.join(', /')}`);
  }
  for (const scope of scopes) {
    for (const command of scope.list) {
      const expected = wanted.get(command.name);
      if (expected === undefined || expected !== signature(command))
        stale.add(`/${command.name} (${scope.label})`);
    }
  }
  const registered = scopes.map((scope) => `${scope.list.length} ${scope.label}`).join(', ');
  if (missing.length > 0) {
    return {
      name: 'Slash commands',
      status: 'fail',
      blocks: true,
      detail: `missing: ${missing.join('; ')}${stale.size > 0 ? `; stale: ${[...stale].join(', ')}` : ''}`,
      fix: 'Run `npm run deploy-commands` (global; can take up to an hour to appear) or `-- --guild <id>` (instant).',
    };
  }
  if (stale.size > 0) {
    return {
      name: 'Slash commands',
      status: 'fail',
      blocks: false,
      detail: `stale or unknown: ${[...stale].join(', ')}`,
      fix: 'Run `npm run deploy-commands` again (it replaces the whole set) for each scope listed.',
    };
  }
  return { name: 'Slash commands', status: 'ok', detail: `registered (${registered})` };
}

const TEXT_NEEDS: readonly [PermissionResolvable, string][] = [
  [PermissionFlagsBits.ViewChannel, 'View Channel'],
  [PermissionFlagsBits.SendMessages, 'Send Messages'],
];
const VOICE_NEEDS: readonly [PermissionResolvable, string][] = [
  [PermissionFlagsBits.ViewChannel, 'View Channel'],
  [PermissionFlagsBits.Connect, 'Connect'],
  [PermissionFlagsBits.Speak, 'Speak'],
];

/** Per server: auto-read channels need View and Send; every voice channel Herald can see needs Connect and Speak. */
function permissionChecks(
  client: Client<true>,
  bound: ReadonlyMap<string, readonly string[]>,
): DoctorCheck[] {
  const checks: DoctorCheck[] = [];
  for (const guild of client.guilds.cache.values()) {
    const me = guild.members.me;
    if (!me) continue;
    const lacking: string[] = [];
    const missing = (
      channel: GuildBasedChannel,
      needs: readonly [PermissionResolvable, string][],
    ): string[] => {
      const permissions = channel.permissionsFor(me);
      return needs.filter(([flag]) => !permissions.has(flag)).map(([, label]) => label);
    };
    for (const channelId of bound.get(guild.id) ?? []) {
      const channel = guild.channels.cache.get(channelId);
      if (!channel) {
        lacking.push(`auto-read channel ${channelId} no longer exists`);
        continue;
      }
      const needs = missing(channel, TEXT_NEEDS);
      if (needs.length > 0) lacking.push(`#${channel.name} (auto-read) lacks ${needs.join(', ')}`);
    }
    let voiceChannels = 0;
    for (const channel of guild.channels.cache.values()) {
      if (!channel.isVoiceBased()) continue;
      voiceChannels += 1;
      // A channel Herald cannot see is one its admins keep it out of; members there cannot call it anyway.
      if (!channel.permissionsFor(me).has(PermissionFlagsBits.ViewChannel)) continue;
      const needs = missing(channel, VOICE_NEEDS);
      if (needs.length > 0) lacking.push(`🔊${channel.name} lacks ${needs.join(', ')}`);
    }
    checks.push(
      lacking.length === 0
        ? {
            name: `Permissions: ${guild.name}`,
            status: 'ok',
            detail: `${voiceChannels} voice channels, ${(bound.get(guild.id) ?? []).length} auto-read channels`,
          }
        : {
            name: `Permissions: ${guild.name}`,
            status: 'fail',
            blocks: true,
            detail: lacking.join('; '),
            fix: 'Server Settings → Roles (or the channel’s Permissions): allow Herald’s role View Channel, Send Messages, Connect and Speak there.',
          },
    );
  }
  return checks;
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

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
