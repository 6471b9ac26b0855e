/**
 * A minimal discord.js bot used to prove the emulator (not Herald): it registers commands, answers them, joins
 * the caller's voice channel and plays Ogg Opus bodies fetched from the TTS emulator.
 */
import { once } from 'node:events';
import { Readable } from 'node:stream';
import {
  AudioPlayerStatus,
  createAudioPlayer,
  createAudioResource,
  entersState,
  getVoiceConnection,
  joinVoiceChannel,
  StreamType,
  type VoiceConnection,
  VoiceConnectionStatus,
} from '@discordjs/voice';
import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  Client,
  GatewayIntentBits,
  type GuildMember,
  type Interaction,
  MessageFlags,
} from 'discord.js';
import { request } from 'undici';

/** Options of {@link startTestBot}. */
export interface TestBotOptions {
  readonly restUrl: string;
  readonly token: string;
  /** Where `/speak` fetches audio: the TTS emulator's base URL, key and a speaker. */
  readonly tts: { baseUrl: string; apiKey: string; speakerId: string };
  /** Add MESSAGE_CONTENT to the intents. */
  readonly messageContent?: boolean;
}

/** The running test bot. */
export interface TestBot {
  readonly client: Client;
  /** Every Ogg body the bot played, in order. */
  readonly played: Buffer[];
  /** Message contents the bot saw (MESSAGE_CREATE), in order. */
  readonly seenMessages: string[];
  /** Errors the bot hit (interaction handling, voice). */
  readonly errors: unknown[];
  connection(guildId: string): VoiceConnection | undefined;
  close(): Promise<void>;
}

/** Logs in to the emulator, registers `/speak`, `/join`, `/leave`, `/ping`, `/echo` and waits for ready. */
export async function startTestBot(o: TestBotOptions): Promise<TestBot> {
  const intents = [
    GatewayIntentBits.Guilds,
    GatewayIntentBits.GuildVoiceStates,
    GatewayIntentBits.GuildMessages,
    ...(o.messageContent ? [GatewayIntentBits.MessageContent] : []),
  ];
  const client = new Client({ intents, rest: { api: o.restUrl } });
  const played: Buffer[] = [];
  const seenMessages: string[] = [];
  const errors: unknown[] = [];
  const player = createAudioPlayer();
  player.on('error', (error) => errors.push(error));

  const join = async (member: GuildMember): Promise<VoiceConnection | undefined> => {
    const channel = member.voice.channel;
    if (!channel) return undefined;
    const connection = joinVoiceChannel({
      channelId: channel.id,
      guildId: channel.guild.id,
      adapterCreator: channel.guild.voiceAdapterCreator,
      selfDeaf: true,
    });
    connection.on('error', (error) => errors.push(error));
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    return connection;
  };

  const speak = async (text: string): Promise<void> => {
    const response = await request(`${o.tts.baseUrl}/speech/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': o.tts.apiKey },
      body: JSON.stringify({ text, speaker_id: o.tts.speakerId }),
    });
    const ogg = Buffer.from(await response.body.arrayBuffer());
    played.push(ogg);
    player.play(createAudioResource(Readable.from([ogg]), { inputType: StreamType.OggOpus }));
    await entersState(player, AudioPlayerStatus.Playing, 5_000);
  };

  const onInteraction = async (interaction: Interaction): Promise<void> => {
    if (interaction.isAutocomplete()) {
      const typed = String(interaction.options.getFocused());
      await interaction.respond(
        ['alpha', 'beta', 'gamma'].filter((n) => n.startsWith(typed)).map((n) => ({ name: n, value: n })),
      );
      return;
    }
    if (interaction.isButton()) {
      await interaction.update({ content: `pressed ${interaction.customId}`, components: [] });
      return;
    }
    if (!interaction.isChatInputCommand() || !interaction.inCachedGuild()) return;
    switch (interaction.commandName) {
      case 'speak': {
        await interaction.deferReply({ flags: MessageFlags.Ephemeral });
        const connection = await join(interaction.member);
        if (!connection) {
          await interaction.editReply({
            content: 'Join a voice channel first.',
            allowedMentions: { parse: [] },
          });
          return;
        }
        connection.subscribe(player);
        await interaction.editReply({ content: 'Speaking.', allowedMentions: { parse: [] } });
        await speak(interaction.options.getString('text', true));
        return;
      }
      case 'join': {
        const connection = await join(interaction.member);
        connection?.subscribe(player);
        await interaction.reply({
          content: connection ? 'Joined.' : 'Not in voice.',
          allowedMentions: { parse: [] },
        });
        return;
      }
      case 'leave':
        getVoiceConnection(interaction.guildId)?.destroy();
        await interaction.reply({ content: 'Left.', allowedMentions: { parse: [] } });
        return;
      case 'ping': {
        const row = new ActionRowBuilder<ButtonBuilder>().addComponents(
          new ButtonBuilder().setCustomId('again').setLabel('Again').setStyle(ButtonStyle.Primary),
        );
        await interaction.reply({ content: 'pong', components: [row], allowedMentions: { parse: [] } });
        await interaction.followUp({ content: 'and a follow-up', flags: MessageFlags.Ephemeral });
        return;
      }
      case 'echo': {
        const channel = interaction.options.getChannel('where');
        const count = interaction.options.getInteger('count') ?? 1;
        const loud = interaction.options.getBoolean('loud') ?? false;
        const who = interaction.options.getUser('who');
        await interaction.reply({
          content: `${interaction.options.getString('text', true)} x${count} loud=${loud} in=${channel?.name ?? '-'} who=${who?.username ?? '-'} admin=${interaction.memberPermissions.has('Administrator')} appConnect=${interaction.appPermissions.has('Connect')}`,
          allowedMentions: { parse: [] },
        });
        return;
      }
      default:
        return;
    }
  };

  client.on('interactionCreate', (interaction) => {
    onInteraction(interaction).catch((error: unknown) => errors.push(error));
  });
  client.on('messageCreate', (message) => {
    if (message.author.id === client.user?.id) return;
    seenMessages.push(message.content);
    if (message.content === '!hello') {
      message.channel
        .send({ content: 'hi', allowedMentions: { parse: [] } })
        .catch((e: unknown) => errors.push(e));
    }
  });

  const ready = once(client, 'clientReady');
  await client.login(o.token);
  await ready;
  await client.application?.commands.set([
    {
      name: 'speak',
      description: 'Say something',
      options: [{ name: 'text', description: 'What to say', type: 3, required: true }],
    },
    { name: 'join', description: 'Join your voice channel' },
    { name: 'leave', description: 'Leave voice' },
    { name: 'ping', description: 'Pong with a button' },
    {
      name: 'echo',
      description: 'Echo options',
      options: [
        { name: 'text', description: 't', type: 3, required: true, autocomplete: true },
        { name: 'count', description: 'c', type: 4 },
        { name: 'loud', description: 'l', type: 5 },
        { name: 'where', description: 'w', type: 7 },
        { name: 'who', description: 'u', type: 6 },
      ],
    },
  ]);

  return {
    client,
    played,
    seenMessages,
    errors,
    connection: (guildId) => getVoiceConnection(guildId),
    close: async () => {
      player.stop(true);
      for (const guild of client.guilds.cache.values()) getVoiceConnection(guild.id)?.destroy();
      await client.destroy();
    },
  };
}
