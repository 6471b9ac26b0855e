import { GatewayIntentBits, IntentsBitField, Partials } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createDiscordClient, shardLabel } from '../../src/discord/client.ts';
import { silentLogger } from '../../src/log.ts';
import { ONE_SHARD } from '../../src/shard/config.ts';
import { openDatabase } from '../../src/storage/index.ts';

const clients: { destroy(): Promise<void> }[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.destroy();
});

/** A client for `shards`, destroyed after the test; it never logs in. */
function clientFor(shards = ONE_SHARD, restUrl: string | undefined = undefined) {
  const client = createDiscordClient({ discord: { token: 'x', applicationId: '1', restUrl }, shards });
  clients.push(client);
  return client;
}

describe('createDiscordClient', () => {
  it('asks for the intents and partials Herald needs, and pings nobody', () => {
    const { options } = clientFor();
    const intents = new IntentsBitField(options.intents);
    for (const intent of [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildVoiceStates,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
    ]) {
      expect(intents.has(intent)).toBe(true);
    }
    expect(options.partials).toEqual([Partials.Message]);
    expect(options.allowedMentions).toEqual({ parse: [] });
  });

  it('names its shards explicitly, and takes a REST base when configured', () => {
    const client = clientFor({ count: 16, ids: [8, 9], managed: false }, 'http://127.0.0.1:9/api');
    expect(client.options.shards).toEqual([8, 9]);
    expect(client.options.shardCount).toBe(16);
    expect(client.options.rest?.api).toBe('http://127.0.0.1:9/api');
    expect(shardLabel(client)).toBe('8,9');
  });

  it('identifies through the database when other processes run shards of the bot, else as discord.js does', async () => {
    const db = openDatabase({ kind: 'sqlite', path: ':memory:' });
    try {
      const identify = { db, logger: silentLogger };
      const some = createDiscordClient(
        {
          discord: { token: 'x', applicationId: '1', restUrl: undefined },
          shards: { count: 4, ids: [3], managed: true },
        },
        { identify },
      );
      const every = createDiscordClient(
        { discord: { token: 'x', applicationId: '1', restUrl: undefined }, shards: ONE_SHARD },
        { identify },
      );
      clients.push(some, every);
      expect(some.options.ws?.buildIdentifyThrottler).toBeTypeOf('function');
      expect(every.options.ws?.buildIdentifyThrottler).toBeUndefined();
    } finally {
      await db.close();
    }
  });

  it('labels one shard by its id, and an unsharded client 0', () => {
    expect(shardLabel(clientFor())).toBe('0');
    expect(shardLabel(clientFor({ count: 4, ids: [3], managed: false }))).toBe('3');
  });
});
