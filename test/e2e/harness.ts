/**
 * The world Herald's end-to-end tests run in: the Discord emulator, the TTS emulator, and Herald itself started
 * in this process exactly as `src/index.ts` starts it (config parsed from an env object, the real composition
 * root), with its log lines captured. Herald can be restarted on the same database.
 */

import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Events, PermissionFlagsBits } from 'discord.js';
import { afterEach } from 'vitest';
import {
  type Channel,
  type DiscordEmulator,
  type DiscordEmulatorOptions,
  type Guild,
  type Member,
  startDiscordEmulator,
} from '../../emulators/discord/index.ts';
import { startTtsEmulator, type TtsEmulator, type TtsEmulatorOptions } from '../../emulators/tts/index.ts';
import { parseConfig, secretsOf } from '../../src/config.ts';
import { type Herald, type HeraldOptions, startHerald } from '../../src/herald.ts';
import { createLogger } from '../../src/log.ts';
import type { TtsTimeouts } from '../../src/tts/index.ts';

/** Options of {@link createWorld}. */
export interface WorldOptions {
  readonly tts?: TtsEmulatorOptions;
  /** Options of the Discord emulator (e.g. `dave: false` to decline DAVE). */
  readonly discord?: DiscordEmulatorOptions;
  /** Extra or overriding environment variables for Herald. */
  readonly env?: Record<string, string>;
  /** Voice join deadline (Herald's default is 15 s). */
  readonly voiceConnectTimeoutMs?: number;
  /** TTS client timeouts (Herald's defaults are seconds long). */
  readonly ttsTimeouts?: TtsTimeouts;
  /** Bound on `/readyz`'s TTS check (Herald's default is 3 s). */
  readonly ttsReadyTimeoutMs?: number;
  /** The clock of data retention, and how often removed servers are checked (Herald's default: hourly). */
  readonly privacy?: HeraldOptions['privacy'];
}

/** A server with a text channel, a voice channel, an admin and a member, and Herald logged in. */
export interface World {
  readonly discord: DiscordEmulator;
  readonly tts: TtsEmulator;
  readonly guild: Guild;
  readonly text: Channel;
  readonly lounge: Channel;
  readonly admin: Member;
  readonly member: Member;
  /** Every line Herald logged, across restarts. */
  readonly logs: string[];
  /** Herald's database file. */
  readonly databasePath: string;
  readonly herald: () => Herald;
  /** The environment Herald was started with (secrets included, for leak checks). */
  readonly env: Record<string, string>;
  /**
   * Stops Herald and starts it again on the same database; resolves once it is ready. `whileDown` runs between
   * the stop and the start (what happens on Discord while Herald is away).
   */
  restart(env?: Record<string, string>, whileDown?: () => Promise<void> | void): Promise<void>;
  close(): Promise<void>;
}

/** The environment that points Herald at the two emulators, with its database at `databasePath`. */
export function heraldEnv(
  discord: DiscordEmulator,
  tts: Pick<TtsEmulator, 'baseUrl' | 'apiKey'>,
  databasePath: string,
): Record<string, string> {
  return {
    DISCORD_TOKEN: discord.token,
    DISCORD_APPLICATION_ID: discord.applicationId,
    DISCORD_REST_URL: discord.restUrl,
    TTS_BASE_URL: tts.baseUrl,
    TTS_API_KEY: tts.apiKey,
    DATABASE_URL: `sqlite:${databasePath}`,
    LOG_LEVEL: 'debug',
    // One process: `node src/index.ts` on several cores otherwise runs shard processes (the shard tests and the
    // bench ask for them with SHARD_COUNT).
    SHARD_COUNT: '1',
    // Most tests repeat a sentence on purpose and count what the service charged; the cache's own tests (and
    // any test about it) turn it on with AUDIO_CACHE_MB.
    AUDIO_CACHE_MB: '0',
  };
}

/**
 * A {@link createWorld} for files whose tests each want a world of their own: every world it opened is closed after
 * each test, whatever became of it. Call it at the top of the file.
 */
export function worldPerTest(): (options?: WorldOptions) => Promise<World> {
  const worlds: World[] = [];
  afterEach(async () => {
    await Promise.all(worlds.splice(0).map((world) => world.close()));
  });
  return async (options = {}) => {
    const world = await createWorld(options);
    worlds.push(world);
    return world;
  };
}

/** Builds the world and starts Herald in it. */
export async function createWorld(options: WorldOptions = {}): Promise<World> {
  const [discord, tts] = await Promise.all([
    startDiscordEmulator(options.discord),
    startTtsEmulator({ speed: 8, ...options.tts }),
  ]);
  const guild = discord.createGuild({ name: 'Herald Test Server' });
  const text = guild.addTextChannel('general');
  const lounge = guild.addVoiceChannel('Lounge');
  const admin = guild.addMember({ name: 'Ada Admin', permissions: PermissionFlagsBits.ManageGuild });
  const member = guild.addMember({ name: 'Bob Member' });
  guild.joinVoice(admin, lounge);
  guild.joinVoice(member, lounge);

  const dataDir = mkdtempSync(join(tmpdir(), 'herald-e2e-'));
  const databasePath = join(dataDir, 'herald.sqlite');
  const logs: string[] = [];
  const env: Record<string, string> = {
    ...heraldEnv(discord, tts, databasePath),
    ...options.env,
  };

  const start = async (overrides: Record<string, string> = {}): Promise<Herald> => {
    Object.assign(env, overrides);
    const parsed = parseConfig(env);
    if (!parsed.ok) throw new Error(`test config invalid: ${parsed.problems.join('; ')}`);
    const logger = createLogger({
      level: parsed.value.logLevel,
      secrets: secretsOf(parsed.value),
      write: (line) => logs.push(line),
    });
    const herald = await startHerald(parsed.value, {
      logger,
      ...(options.ttsTimeouts ? { ttsTimeouts: options.ttsTimeouts } : {}),
      ...(options.ttsReadyTimeoutMs === undefined ? {} : { ttsReadyTimeoutMs: options.ttsReadyTimeoutMs }),
      ...(options.privacy ? { privacy: options.privacy } : {}),
      ...(options.voiceConnectTimeoutMs === undefined
        ? {}
        : { voiceConnectTimeoutMs: options.voiceConnectTimeoutMs }),
    });
    // discord.js is ready once every guild of READY has arrived as GUILD_CREATE.
    if (!herald.client.isReady()) await once(herald.client, Events.ClientReady);
    return herald;
  };

  let herald = await start();
  return {
    discord,
    tts,
    guild,
    text,
    lounge,
    admin,
    member,
    logs,
    databasePath,
    env,
    herald: () => herald,
    async restart(overrides, whileDown) {
      await herald.stop();
      await whileDown?.();
      herald = await start(overrides);
    },
    async close() {
      await herald.stop();
      await Promise.all([discord.close(), tts.close()]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
