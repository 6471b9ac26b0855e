import { once } from 'node:events';
import {
  Client,
  Events,
  GatewayIntentBits,
  type GuildBasedChannel,
  PermissionFlagsBits,
  type PermissionResolvable,
  type RESTPostAPIApplicationCommandsJSONBody,
} from 'discord.js';
import type { Config } from '../config.ts';
import { type DoctorCheck, messageOf } from './doctor-check.ts';

/**
 * The doctor's Discord rows: the token, the application it belongs to, the Message Content intent, the slash
 * commands registered, and each server's permissions as the gateway shows them to Herald.
 */

/** What the Discord checks may use (part of the doctor's context). */
export interface DiscordDoctorContext {
  readonly config: Config;
  /** Herald's slash commands, as registered by `npm run deploy-commands`. */
  readonly commands: readonly RESTPostAPIApplicationCommandsJSONBody[];
  /** Logs a discord.js client in (Guilds intent only: never a privileged one) and resolves once it is ready. */
  readonly login: () => Promise<Client<true>>;
  /** `fetch`, for Discord's REST API. */
  readonly fetch?: typeof fetch;
}

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

export interface GuildFacts {
  readonly id: string;
  readonly name: string;
}

/** Token, application, intent, commands and per-server permissions. */
export async function discordChecks(
  context: DiscordDoctorContext,
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
  context: DiscordDoctorContext,
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
