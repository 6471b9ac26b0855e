/**
 * The sandbox: the local Discord, the local TTS service (or the real one), the unmodified Herald against them,
 * and a web page on 127.0.0.1 that plays the server's members. One HTTP port serves the page, a small JSON API
 * for the page's actions, and a WebSocket that pushes the state and the voice channel's audio.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Events } from 'discord.js';
import type { WebSocket } from 'ws';
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
  startTtsEmulator,
  type TtsEmulator,
} from '../emulators/tts/index.ts';
import { createBudgetStore } from '../src/budget/index.ts';
import { type Env, parseConfig, secretsOf } from '../src/config.ts';
import { type Herald, startHerald } from '../src/herald.ts';
import { createLogger } from '../src/log.ts';
import { openDatabase } from '../src/storage/index.ts';
import { type Action, BadRequest, listenForPage } from './http.ts';
import { createModeration } from './moderation.ts';
import { createEmulatedServicePanel, createRealServicePanel } from './service.ts';
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
  // A fresh database each time (the emulated server's ids are new each time too), in a file so that the
  // service panel can read Herald's ledger beside it.
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-sandbox-'));
  const databasePath = join(dataDir, 'herald.sqlite');
  const cleanUp = async (): Promise<void> => {
    await Promise.all([discord.close(), ttsEmulator?.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  };

  const heraldEnv: Record<string, string | undefined> = {
    ...pick(env, /^(BUDGET_|TTS_API_FORM$|TTS_DEFAULT_SPEAKER$|IDLE_TIMEOUT_SECONDS$)/),
    DISCORD_TOKEN: discord.token,
    DISCORD_APPLICATION_ID: discord.applicationId,
    DISCORD_REST_URL: discord.restUrl,
    TTS_BASE_URL: ttsEmulator?.baseUrl ?? env.TTS_BASE_URL,
    TTS_API_KEY: ttsEmulator?.apiKey ?? env.TTS_API_KEY,
    DATABASE_URL: `sqlite:${databasePath}`,
    LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
    BOT_OWNER_IDS: world.admin.id,
  };
  // The emulated account starts at $10 with a $1 floor, so draining it shows the guard at work.
  if (ttsEmulator) heraldEnv.BUDGET_FLOOR_USD ??= SANDBOX_FLOOR_USD;
  const parsed = parseConfig(heraldEnv);
  if (!parsed.ok) {
    await cleanUp();
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
    await cleanUp();
    throw error;
  }
  // As `npm run deploy-commands -- --guild` would: the page builds its command forms from the same list.
  const commandData = commands.map((command) => command.data.toJSON());
  const registered = await fetch(
    `${discord.restUrl}/applications/${discord.applicationId}/guilds/${world.guild.id}/commands`,
    {
      method: 'PUT',
      headers: { Authorization: `Bot ${discord.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(commandData),
    },
  );
  if (!registered.ok)
    logger.warn('the sandbox could not register the commands', { status: registered.status });

  const service = ttsEmulator
    ? createEmulatedServicePanel(ttsEmulator, {
        pricePerCharUsd: START_PRICE_USD,
        floorUsd: config.budget.floorUsd,
      })
    : await (async () => {
        const db = openDatabase({ kind: 'sqlite', path: databasePath });
        return createRealServicePanel(
          config.tts.baseUrl,
          config.budget.floorUsd,
          await createBudgetStore(db),
          () => db.close(),
        );
      })();
  const sockets = new Set<WebSocket>();
  let lastState = '';
  let stateTimer: NodeJS.Timeout | undefined;
  const timelines = createTimelines(discord, channels, () => scheduleState());
  const memberById = (id: unknown): Member => {
    const member = world.members.find((m) => m.id === id);
    if (!member) throw new BadRequest('unknown member');
    return member;
  };
  /** A channel of the page's; `voice` also finds the stage (joined as a voice channel is). */
  const channelById = (id: unknown, type?: 'text' | 'voice'): Channel => {
    const kindOf = (c: Channel) => (c.type === 'stage' ? 'voice' : c.type);
    const channel = channels.find((c) => c.id === id && (type === undefined || kindOf(c) === type));
    if (!channel) throw new BadRequest('unknown channel');
    return channel;
  };

  const moderation = createModeration(world.guild, [world.admin], () => scheduleState());
  const state = () => ({
    guild: { id: world.guild.id, name: world.guild.name },
    bot: {
      id: discord.botUserId,
      name: 'Herald',
      voiceChannelId: world.guild.botVoiceChannelId(),
      ...moderation.view(),
    },
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
    service: service.view(),
  });
  const voiceChannelOf = (memberId: string): string | null => {
    for (const channel of world.voiceChannels) {
      if (world.guild.voiceMembers(channel).includes(memberId)) return channel.id;
    }
    return null;
  };
  const sendState = (): void => {
    stateTimer = undefined;
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

  const actions: Record<string, Action> = {
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
      if (body.memberId === discord.botUserId) {
        // An admin drags Herald (or disconnects it), as Discord's client lets them.
        world.guild.moveBot(body.channelId === null ? null : channelById(body.channelId, 'voice'));
        scheduleState();
        return {};
      }
      const member = memberById(body.memberId);
      if (body.channelId === null) world.guild.leaveVoice(member);
      else world.guild.joinVoice(member, channelById(body.channelId, 'voice'));
      scheduleState();
      return {};
    },
    moderate: moderation.moderate,
    service: (body) => {
      service.act(body);
      scheduleState();
      return {};
    },
  };

  let page: Awaited<ReturnType<typeof listenForPage>>;
  try {
    page = await listenForPage({
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 3000,
      actions,
      logger,
      onSocket: (socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.send(JSON.stringify({ type: 'state', state: state() }));
      },
    });
  } catch (error) {
    service.close();
    await herald.stop();
    await cleanUp();
    throw error;
  }

  // The operator makes #general read aloud, as a first visitor would see it done (Ada's answer is hers only).
  timelines.interaction(
    world.general,
    world.admin.id,
    '/autoread channel channel: #general enabled: true',
    discord.slash(
      world.admin,
      'autoread',
      { channel: world.general, enabled: true },
      { subcommand: 'channel', channel: world.general },
    ),
  );

  return {
    url: page.url,
    tts: choice.tts,
    discord,
    ttsEmulator,
    world,
    async close() {
      clearInterval(ttsWatch);
      clearTimeout(stateTimer);
      unsubscribe();
      stopVoice();
      await page.close();
      service.close();
      await herald.stop();
      await cleanUp();
    },
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
