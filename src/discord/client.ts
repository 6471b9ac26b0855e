import { Client, GatewayIntentBits, Partials, type WebSocketOptions } from 'discord.js';
import type { Config } from '../config.ts';
import { type IdentifyDependencies, identifyThrottlerOptions } from '../gateway/index.ts';
import { clientShardOptions } from '../shard/client.ts';
import { NO_MENTIONS } from './replies.ts';

/** What the client is built with beside the configuration. */
export interface DiscordClientOptions {
  /** The database and logger of an IDENTIFY throttler shared with the bot's other processes (when it has some). */
  readonly identify?: IdentifyDependencies;
  /** The strategy that keeps each shard's gateway session in the database (`createGatewaySessions().wsOptions`). */
  readonly sessions?: Pick<WebSocketOptions, 'buildStrategy'>;
}

/** Herald's discord.js client for `config`: its intents, partials and shards; not logged in yet. */
export function createDiscordClient(
  config: Pick<Config, 'discord' | 'shards'>,
  options: DiscordClientOptions = {},
): Client {
  return new Client({
    // MessageContent is privileged: enable it for the application in the Discord developer portal.
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildVoiceStates,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
    ],
    // Deletions and edits of messages discord.js no longer caches (a busy channel, a restart) still arrive, as
    // partials carrying only ids: a message queued for reading must be withdrawn or re-read all the same.
    partials: [Partials.Message],
    allowedMentions: NO_MENTIONS,
    ...(config.discord.restUrl ? { rest: { api: config.discord.restUrl } } : {}),
    // Explicit, so that discord.js never picks SHARD_COUNT up from the environment on its own.
    ...clientShardOptions(config.shards),
    ws: {
      // Other processes running shards of this bot IDENTIFY in the same buckets: the slots are taken in the database.
      ...identifyThrottlerOptions(config.shards, options.identify),
      // Each shard's session in the database, so that a restart RESUMEs.
      ...options.sessions,
    },
  });
}

/** The shard(s) a client runs, for log lines and the budget's owner: `0` when unsharded. */
export function shardLabel(client: Client): string {
  const { shards } = client.options;
  if (typeof shards === 'number') return String(shards);
  if (Array.isArray(shards)) return shards.join(',');
  return '0';
}

/**
 * Posts `content` in a channel by id, pinging nobody.
 * @throws when Discord cannot find the channel or Herald cannot post in it.
 */
export async function postInChannel(client: Client, channelId: string, content: string): Promise<void> {
  const channel = await client.channels.fetch(channelId);
  if (!channel?.isSendable()) throw new Error(`Herald cannot post in channel ${channelId}.`);
  await channel.send({ content, allowedMentions: NO_MENTIONS });
}
