/**
 * The sandbox: the local Discord, the local TTS service (or the real one), the unmodified Herald against them,
 * and a web page on 127.0.0.1 that plays the server's members. One HTTP port serves the page, a small JSON API
 * for the page's actions, and a WebSocket that pushes the state and the voice channel's audio.
 */
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Events } from 'discord.js';
import { type WebSocket, WebSocketServer } from 'ws';
import { commands } from '../commands/index.ts';
import {
  type Channel,
  type DiscordEmulator,
  type Member,
  startDiscordEmulator,
} from '../emulators/discord/index.ts';
import {
  DEFAULT_SPEAKERS,
  type EmulatedSpeaker,
  type Fault,
  startTtsEmulator,
  type TtsEmulator,
} from '../emulators/tts/index.ts';
import { type Env, parseConfig, secretsOf } from '../src/config.ts';
import { type Herald, startHerald } from '../src/herald.ts';
import { createLogger } from '../src/log.ts';
import { forwardVoice } from './voice.ts';
import { createSandboxGuild, createTimelines, type SandboxGuild } from './world.ts';

/** Options of {@link startSandbox}. */
export interface SandboxOptions {
  /** Address to listen on; default 127.0.0.1 (the page can spend real money when a real TTS key is set). */
  readonly host?: string;
  /** Port; default 3000; 0 picks a free one. */
  readonly port?: number;
  /** The environment: TTS_BASE_URL + TTS_API_KEY select the real TTS service; LOG_LEVEL, BUDGET_* apply. */
  readonly env?: Env;
  /** Where Herald's log lines go; default standard error. */
  readonly log?: (line: string) => void;
}

/** A running sandbox. */
export interface Sandbox {
  /** The page's address, e.g. http://127.0.0.1:3000/ */
  readonly url: string;
  /** 'emulated': the local TTS emulator; 'real': the TTS service of TTS_BASE_URL, with the budget guard. */
  readonly tts: 'emulated' | 'real';
  readonly discord: DiscordEmulator;
  /** The TTS emulator, when `tts` is 'emulated'. */
  readonly ttsEmulator: TtsEmulator | undefined;
  readonly world: SandboxGuild;
  close(): Promise<void>;
}

/** Result of {@link sandboxTtsChoice}: which TTS service the sandbox uses, or why it cannot start. */
export type TtsChoice = { ok: true; tts: 'emulated' | 'real' } | { ok: false; problems: string[] };

/** The real TTS service when both TTS_BASE_URL and TTS_API_KEY are set; the emulator when neither is. */
export function sandboxTtsChoice(env: Env): TtsChoice {
  const url = env.TTS_BASE_URL?.trim();
  const key = env.TTS_API_KEY?.trim();
  if (url && key) return { ok: true, tts: 'real' };
  if (!url && !key) return { ok: true, tts: 'emulated' };
  return {
    ok: false,
    problems: [
      url
        ? 'TTS_API_KEY is missing: set it with TTS_BASE_URL to use the real TTS service, or unset both.'
        : 'TTS_BASE_URL is missing: set it with TTS_API_KEY to use the real TTS service, or unset both.',
    ],
  };
}

/** The emulator's voices in the sandbox: the six defaults and enough more that /voices has a second page. */
export const SANDBOX_SPEAKERS: readonly EmulatedSpeaker[] = [
  ...DEFAULT_SPEAKERS,
  ...['Iris', 'Jonah', 'Kai', 'Lena', 'Milo', 'Nia', 'Otto', 'Pia'].map((name, i) => ({
    id: `6b1a0c2d-3e4f-4a5b-8c6d-${(0x7e8f9a0b1c20 + i).toString(16)}`,
    name,
    voiceKey: `sb_${name.toLowerCase()}`,
    gender: i % 2 === 0 ? 'female' : 'male',
    languages: ['en'],
    // Between and beside the defaults' tones, at least 20 Hz from any other, so the page can tell them apart.
    toneHz: [260, 290, 370, 400, 480, 510, 610, 740][i] ?? 1000,
  })),
];

const PAGE_DIR = join(import.meta.dirname, 'page');
const STATIC: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};
const START_BALANCE_USD = 10;
const START_PRICE_USD = 0.0001;
const SANDBOX_FLOOR_USD = '1';

/** Starts the emulators, Herald and the page's server. @throws when the configuration or a port is unusable. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const env = options.env ?? {};
  const choice = sandboxTtsChoice(env);
  if (!choice.ok) throw new Error(choice.problems.join(' '));
  const [discord, ttsEmulator] = await Promise.all([
    startDiscordEmulator({ botName: 'Herald' }),
    choice.tts === 'emulated'
      ? startTtsEmulator({
          speakers: [...SANDBOX_SPEAKERS],
          balanceUsd: START_BALANCE_USD,
          pricePerCharUsd: START_PRICE_USD,
        })
      : Promise.resolve(undefined),
  ]);
  const world = createSandboxGuild(discord);
  const channels = [...world.textChannels, ...world.voiceChannels];
  let pricePerCharUsd = START_PRICE_USD;
  const injected: { label: string; at: number }[] = [];

  const heraldEnv: Record<string, string | undefined> = {
    ...pick(env, /^(BUDGET_|TTS_API_FORM$|TTS_DEFAULT_SPEAKER$|IDLE_TIMEOUT_SECONDS$)/),
    DISCORD_TOKEN: discord.token,
    DISCORD_APPLICATION_ID: discord.applicationId,
    DISCORD_REST_URL: discord.restUrl,
    TTS_BASE_URL: ttsEmulator?.baseUrl ?? env.TTS_BASE_URL,
    TTS_API_KEY: ttsEmulator?.apiKey ?? env.TTS_API_KEY,
    DATABASE_URL: ':memory:',
    LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
    BOT_OWNER_IDS: world.admin.id,
  };
  // The emulated account starts at $10 with a $1 floor, so draining it shows the guard at work.
  if (ttsEmulator) heraldEnv.BUDGET_FLOOR_USD ??= SANDBOX_FLOOR_USD;
  const parsed = parseConfig(heraldEnv);
  if (!parsed.ok) {
    await Promise.all([discord.close(), ttsEmulator?.close()]);
    throw new Error(`the sandbox cannot start Herald: ${parsed.problems.join(' ')}`);
  }
  const config = parsed.value;
  const write = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const logger = createLogger({ level: config.logLevel, secrets: secretsOf(config), write });
  let herald: Herald;
  try {
    herald = await startHerald(config, { logger });
    if (!herald.client.isReady()) await once(herald.client, Events.ClientReady);
  } catch (error) {
    await Promise.all([discord.close(), ttsEmulator?.close()]);
    throw error;
  }
  // As `npm run deploy-commands -- --guild` would: the page builds its command forms from the same list.
  const commandData = commands.map((command) => command.data.toJSON());
  await fetch(`${discord.restUrl}/applications/${discord.applicationId}/guilds/${world.guild.id}/commands`, {
    method: 'PUT',
    headers: { Authorization: `Bot ${discord.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(commandData),
  });

  const sockets = new Set<WebSocket>();
  let lastState = '';
  let stateTimer: NodeJS.Timeout | undefined;
  const timelines = createTimelines(discord, channels, () => scheduleState());
  const memberById = (id: unknown): Member => {
    const member = world.members.find((m) => m.id === id);
    if (!member) throw new BadRequest('unknown member');
    return member;
  };
  const channelById = (id: unknown, type?: 'text' | 'voice'): Channel => {
    const channel = channels.find((c) => c.id === id && (type === undefined || c.type === type));
    if (!channel) throw new BadRequest('unknown channel');
    return channel;
  };

  const state = () => ({
    guild: { id: world.guild.id, name: world.guild.name },
    bot: { id: discord.botUserId, name: 'Herald', voiceChannelId: world.guild.botVoiceChannelId() },
    members: world.members.map((m) => ({
      id: m.id,
      name: m.name,
      role: m.role,
      voiceChannelId: voiceChannelOf(m.id),
    })),
    channels: channels.map((c) => ({ id: c.id, name: c.name, type: c.type })),
    messages: timelines.view(),
    commands: commandData,
    voice: { connected: discord.voice(world.guild).connected },
    service: ttsEmulator
      ? {
          kind: 'emulated',
          balanceUsd: ttsEmulator.balanceUsd,
          pricePerCharUsd,
          floorUsd: config.budget.floorUsd,
          speakers: ttsEmulator.speakers.map((s) => ({ id: s.id, name: s.name, toneHz: s.toneHz })),
          injected,
          ledger: ttsEmulator.requests
            .filter((r) => r.path.endsWith('/speech/generate'))
            .map((r) => ledgerRow(r.body, r.status, r.chargedUsd, r.receivedAt, r.requestId, ttsEmulator))
            .reverse()
            .slice(0, 50),
          chargedUsd: ttsEmulator.totalChargedUsd(),
        }
      : {
          kind: 'real',
          // The host only: a base URL could carry credentials, and the key never leaves this process.
          host: safeHost(config.tts.baseUrl),
          floorUsd: config.budget.floorUsd,
        },
  });
  const voiceChannelOf = (memberId: string): string | null => {
    for (const channel of world.voiceChannels) {
      if (world.guild.voiceMembers(channel).includes(memberId)) return channel.id;
    }
    return null;
  };
  const sendState = (): void => {
    stateTimer = undefined;
    timelines.refresh();
    const text = JSON.stringify({ type: 'state', state: state() });
    if (text === lastState) return;
    lastState = text;
    for (const socket of sockets) socket.send(text);
  };
  function scheduleState(): void {
    stateTimer ??= setTimeout(sendState, 20);
  }
  const unsubscribe = discord.subscribe(scheduleState);
  // The TTS emulator has no events: its balance and ledger are looked at a few times a second.
  const ttsWatch = setInterval(scheduleState, 250);
  const stopVoice = forwardVoice(discord.voice(world.guild), {
    pcm: (frame) => {
      for (const socket of sockets) socket.send(frame, { binary: true });
    },
    speaking: (on) => {
      const text = JSON.stringify({ type: 'speaking', on });
      for (const socket of sockets) socket.send(text);
      scheduleState();
    },
  });

  const actions: Record<string, (body: Record<string, unknown>) => Promise<unknown> | unknown> = {
    state: () => state(),
    message: (body) => {
      const member = memberById(body.as);
      const channel = channelById(body.channelId, 'text');
      const content = String(body.content ?? '').slice(0, 2000);
      if (content.trim() === '') throw new BadRequest('empty message');
      timelines.said(channel, member.id, discord.sendMessage(member, channel, content));
      return {};
    },
    slash: (body) => {
      const member = memberById(body.as);
      const channel = channelById(body.channelId, 'text');
      const command = String(body.command ?? '');
      if (!commandData.some((c) => c.name === command)) throw new BadRequest('unknown command');
      const subcommand = typeof body.subcommand === 'string' ? body.subcommand : undefined;
      const values = optionValues(body.options, channels);
      const line = commandLine(command, subcommand, values);
      timelines.interaction(
        channel,
        member.id,
        line,
        discord.slash(member, command, values, { channel, ...(subcommand ? { subcommand } : {}) }),
      );
      return {};
    },
    autocomplete: async (body) => {
      const member = memberById(body.as);
      const channel = channelById(body.channelId, 'text');
      const subcommand = typeof body.subcommand === 'string' ? body.subcommand : undefined;
      const values = optionValues(body.options, channels);
      const choices = await discord.autocomplete(
        member,
        String(body.command ?? ''),
        Object.fromEntries(
          Object.entries(values).filter((e): e is [string, string | number] => typeof e[1] !== 'object'),
        ),
        String(body.focused ?? ''),
        { channel, ...(subcommand ? { subcommand } : {}) },
      );
      return { choices };
    },
    press: async (body) => {
      const member = memberById(body.as);
      const message = timelines.message(String(body.messageId ?? ''));
      if (!message) throw new BadRequest('unknown message');
      const channel = channelById(message.channelId, 'text');
      const answer = discord.press(member, message, String(body.customId ?? ''));
      const reply = await answer.catch((error: unknown) => {
        throw new BadRequest(error instanceof Error ? error.message : String(error));
      });
      if (reply.message.id === message.id) timelines.updated(message.id, reply);
      else timelines.interaction(channel, member.id, `pressed ${String(body.customId)}`, answer);
      return {};
    },
    move: (body) => {
      const member = memberById(body.memberId);
      if (body.channelId === null) world.guild.leaveVoice(member);
      else world.guild.joinVoice(member, channelById(body.channelId, 'voice'));
      scheduleState();
      return {};
    },
    service: (body) => {
      if (!ttsEmulator) throw new BadRequest('the real TTS service cannot be changed from here');
      const usd = Number(body.usd);
      switch (body.action) {
        case 'top-up':
          ttsEmulator.balanceUsd += Number.isFinite(usd) && usd > 0 ? usd : 5;
          break;
        case 'drain':
          ttsEmulator.balanceUsd = 0;
          break;
        case 'price':
          if (!(Number.isFinite(usd) && usd >= 0 && usd <= 1)) throw new BadRequest('price must be 0 to 1');
          pricePerCharUsd = usd;
          ttsEmulator.configure({ pricePerCharUsd: usd });
          break;
        case 'fault': {
          const fault = FAULTS[String(body.fault)];
          if (!fault) throw new BadRequest('unknown fault');
          ttsEmulator.inject(fault.fault);
          injected.unshift({ label: fault.label, at: Date.now() });
          injected.splice(10);
          break;
        }
        default:
          throw new BadRequest('unknown service action');
      }
      scheduleState();
      return {};
    },
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof BadRequest ? 400 : 500;
      if (status === 500) logger.error('sandbox request failed', { err: error });
      if (!res.headersSent) res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
    });
  });
  const allowedHosts = new Set<string>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Another site's page could reach this port through the browser (DNS rebinding, form posts): only requests
    // addressed to this server by name, and JSON posts (which browsers never send cross-site unasked), pass.
    if (!allowedHosts.has(req.headers.host ?? '')) {
      res.writeHead(403).end('wrong Host');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
    const file = STATIC[url.pathname];
    if (req.method === 'GET' && file) {
      const body = await readFile(join(PAGE_DIR, file.file));
      res.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-store' }).end(body);
      return;
    }
    const action = url.pathname.startsWith('/api/') ? actions[url.pathname.slice(5)] : undefined;
    if (!action) {
      res.writeHead(404).end('not found');
      return;
    }
    if (req.method !== 'POST' || !req.headers['content-type']?.startsWith('application/json')) {
      res.writeHead(405).end('POST JSON');
      return;
    }
    const body = await readJson(req);
    const result = await action(body);
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(result));
  };
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const origin = req.headers.origin;
    const sameOrigin = origin === undefined || allowedHosts.has(new URL(origin).host);
    if (req.url !== '/ws' || !allowedHosts.has(req.headers.host ?? '') || !sameOrigin) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      ws.send(JSON.stringify({ type: 'state', state: state() }));
    });
  });
  const host = options.host ?? '127.0.0.1';
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 3000, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await Promise.all([herald.stop(), discord.close(), ttsEmulator?.close()]);
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  for (const name of [shownHost, 'localhost', '127.0.0.1']) allowedHosts.add(`${name}:${port}`);

  // The operator makes #general read aloud, as a first visitor would see it done (Ada's answer is hers only).
  timelines.interaction(
    channelById(world.textChannels[0]?.id, 'text'),
    world.admin.id,
    '/autoread channel channel: #general enabled: true',
    discord.slash(
      world.admin,
      'autoread',
      { channel: world.textChannels[0] as Channel, enabled: true },
      { subcommand: 'channel', channel: world.textChannels[0] as Channel },
    ),
  );

  return {
    url: `http://${shownHost}:${port}/`,
    tts: choice.tts,
    discord,
    ttsEmulator,
    world,
    async close() {
      clearInterval(ttsWatch);
      clearTimeout(stateTimer);
      unsubscribe();
      stopVoice();
      for (const socket of sockets) socket.terminate();
      wss.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await herald.stop();
      await Promise.all([discord.close(), ttsEmulator?.close()]);
    },
  };
}

/** A refusal of the page's request (400), as opposed to a failure of the sandbox (500). */
class BadRequest extends Error {}

const FAULTS: Record<string, { label: string; fault: Fault }> = {
  latency: { label: '3 s latency', fault: { kind: 'delay-headers', ms: 3000 } },
  '429': { label: '429 rate limited', fault: { kind: 'status', status: 429, retryAfter: '2' } },
  '503': { label: '503 unavailable', fault: { kind: 'status', status: 503 } },
  '402': {
    label: '402 out of credit',
    fault: {
      kind: 'status',
      status: 402,
      body: { error: { code: 'insufficient_balance', message: 'Insufficient balance' } },
    },
  },
  stall: { label: 'stall mid-stream', fault: { kind: 'stall', afterBytes: 400, ms: 30_000 } },
  reset: { label: 'connection reset', fault: { kind: 'reset', afterBytes: 400 } },
};

function ledgerRow(
  body: unknown,
  status: number,
  chargedUsd: number,
  at: number,
  requestId: string,
  tts: TtsEmulator,
): Record<string, unknown> {
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const text = typeof fields.text === 'string' ? fields.text : '';
  const speaker = tts.speakers.find((s) => s.id === fields.speaker_id);
  return {
    at,
    status,
    chargedUsd,
    characters: [...text].length,
    text: text.length > 60 ? `${text.slice(0, 59)}…` : text,
    speaker: speaker?.name ?? '',
    requestId,
  };
}

type OptionValue = string | number | boolean | Channel;

/** The page's option values; a channel option arrives as `{ "channel": id }`. */
function optionValues(raw: unknown, channels: readonly Channel[]): Record<string, OptionValue> {
  const out: Record<string, OptionValue> = {};
  if (typeof raw !== 'object' || raw === null) return out;
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      out[name] = value;
    } else if (typeof value === 'object' && value !== null && 'channel' in value) {
      const channel = channels.find((c) => c.id === value.channel);
      if (!channel) throw new BadRequest(`unknown channel for ${name}`);
      out[name] = channel;
    }
  }
  return out;
}

/** The command as Discord shows it above the answer: `/autoread channel channel: #general enabled: true`. */
function commandLine(
  command: string,
  subcommand: string | undefined,
  values: Record<string, OptionValue>,
): string {
  const parts = Object.entries(values).map(
    ([name, value]) => `${name}: ${typeof value === 'object' ? `#${value.name}` : String(value)}`,
  );
  return [`/${command}`, ...(subcommand ? [subcommand] : []), ...parts].join(' ');
}

function pick(env: Env, pattern: RegExp): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => pattern.test(name)));
}

function safeHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return 'the configured service';
  }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 65_536) throw new BadRequest('body too large');
    chunks.push(chunk as Buffer);
  }
  const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new BadRequest('body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}
