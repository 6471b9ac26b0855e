import {
  ChannelType,
  type ChatInputCommandInteraction,
  escapeMarkdown,
  InteractionContextType,
  PermissionFlagsBits,
  SlashCommandBuilder,
} from 'discord.js';
import {
  AUTOREAD_LIMITS,
  type AutoReadEmoji,
  type AutoReadSettings,
  type AutoReadSettingsPatch,
  type AutoReadStore,
} from '../src/autoread/settings.ts';
import type { Command, Deps } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';

/** /autoread needs the auto-read store beside the common deps. */
type AutoReadDeps = Deps & { readonly autoread: AutoReadStore };

/** Channels whose messages members write: text, announcements, and a voice channel's own chat. */
const READABLE_CHANNELS = [
  ChannelType.GuildText,
  ChannelType.GuildAnnouncement,
  ChannelType.GuildVoice,
  ChannelType.GuildStageVoice,
] as const;

/** Typing this disables the ignore prefix (Discord string options cannot be empty). */
const NO_PREFIX = 'none';

export const autoread = {
  data: new SlashCommandBuilder()
    .setName('autoread')
    .setDescription('Have Herald read a text channel aloud while it is in voice.')
    .setContexts(InteractionContextType.Guild)
    // No default member permissions: `me` and `show` are for everyone, so the handler checks Manage Server for
    // `channel` and `set`.
    .addSubcommand((sub) =>
      sub
        .setName('channel')
        .setDescription('Read (or stop reading) a channel aloud. Needs Manage Server.')
        .addChannelOption((option) =>
          option
            .setName('channel')
            .setDescription('The text channel')
            .setRequired(true)
            .addChannelTypes(...READABLE_CHANNELS),
        )
        .addBooleanOption((option) =>
          option.setName('enabled').setDescription('True to read it, false to stop').setRequired(true),
        ),
    )
    .addSubcommand((sub) =>
      sub
        .setName('set')
        .setDescription('Change how messages are read. Needs Manage Server.')
        .addBooleanOption((option) =>
          option.setName('voice-chat').setDescription('Also read the chat of the voice channel I am in'),
        )
        .addBooleanOption((option) =>
          option.setName('same-voice-only').setDescription('Read only members in my voice channel'),
        )
        .addBooleanOption((option) =>
          option.setName('ignore-bots').setDescription('Never read bots and webhooks'),
        )
        .addStringOption((option) =>
          option
            .setName('prefix')
            .setDescription(`Messages starting with this are not read; “${NO_PREFIX}” reads every message`)
            .setMaxLength(AUTOREAD_LIMITS.prefixLength),
        )
        .addBooleanOption((option) =>
          option.setName('skip-silent').setDescription('Skip messages sent with @silent'),
        )
        .addBooleanOption((option) =>
          option.setName('announce-author').setDescription('Say “<name> said” before a message'),
        )
        .addIntegerOption((option) =>
          option
            .setName('author-window')
            .setDescription('Seconds before the same author’s name is said again')
            .setMinValue(AUTOREAD_LIMITS.authorWindowSeconds.min)
            .setMaxValue(AUTOREAD_LIMITS.authorWindowSeconds.max),
        )
        .addIntegerOption((option) =>
          option
            .setName('max-chars')
            .setDescription('Most characters read per message; longer ones end with “and more”')
            .setMinValue(AUTOREAD_LIMITS.maxChars.min)
            .setMaxValue(AUTOREAD_LIMITS.maxChars.max),
        )
        .addStringOption((option) =>
          option
            .setName('emoji')
            .setDescription('Read emoji by name, or leave them out')
            .addChoices({ name: 'read their name', value: 'name' }, { name: 'leave out', value: 'drop' }),
        )
        .addBooleanOption((option) =>
          option.setName('link-domains').setDescription('Say “a link to example.com” instead of “a link”'),
        )
        .addBooleanOption((option) =>
          option
            .setName('auto-join')
            .setDescription('Come without /join: a message here, or a member joining a read voice channel'),
        ),
    )
    .addSubcommand((sub) => sub.setName('show').setDescription('Show the auto-read settings of this server.'))
    .addSubcommand((sub) =>
      sub
        .setName('me')
        .setDescription('Choose whether Herald reads your own messages aloud.')
        .addBooleanOption((option) =>
          option.setName('enabled').setDescription('False: never read my messages').setRequired(true),
        ),
    ),

  // Deps gains `autoread` in the composition root; the wider parameter type says so until then.
  async execute(interaction, deps: AutoReadDeps) {
    const subcommand = interaction.options.getSubcommand(true);
    if (
      (subcommand === 'channel' || subcommand === 'set') &&
      !interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)
    ) {
      return respondEphemeral(
        interaction,
        'Changing auto-read needs the Manage Server permission. Use /autoread me to choose whether you are read.',
      );
    }
    switch (subcommand) {
      case 'channel':
        return bindChannel(interaction, deps.autoread);
      case 'set':
        return changeSettings(interaction, deps.autoread);
      case 'show': {
        const settings = await deps.autoread.settings(interaction.guildId);
        const optedOut = await deps.autoread.optedOut(interaction.guildId, interaction.user.id);
        return respondEphemeral(interaction, describeSettings(settings, optedOut));
      }
      case 'me': {
        const enabled = interaction.options.getBoolean('enabled', true);
        await deps.autoread.setOptedOut(interaction.guildId, interaction.user.id, !enabled);
        return respondEphemeral(
          interaction,
          enabled
            ? 'I will read your messages aloud in this server’s auto-read channels again.'
            : 'I will no longer read your messages aloud in this server. /autoread me enabled:true undoes it.',
        );
      }
      default:
        return respondEphemeral(interaction, `Unknown subcommand ${subcommand}.`);
    }
  },
} satisfies Command;

async function bindChannel(
  interaction: ChatInputCommandInteraction<'cached'>,
  store: AutoReadStore,
): Promise<void> {
  const channel = interaction.options.getChannel('channel', true, READABLE_CHANNELS);
  const enabled = interaction.options.getBoolean('enabled', true);
  const outcome = await store.bindChannel(interaction.guildId, channel.id, enabled);
  switch (outcome.kind) {
    case 'too-many':
      return respondEphemeral(
        interaction,
        `A server can have at most ${outcome.limit} auto-read channels. Unbind one first (see /autoread show).`,
      );
    case 'unchanged':
      return respondEphemeral(
        interaction,
        enabled ? `I already read <#${channel.id}>.` : `I was not reading <#${channel.id}>.`,
      );
    case 'unbound':
      return respondEphemeral(interaction, `I will no longer read <#${channel.id}> aloud.`);
    case 'bound': {
      const me = interaction.guild.members.me;
      const canRead = me ? channel.permissionsFor(me).has(PermissionFlagsBits.ViewChannel) : false;
      const warning = canRead
        ? ''
        : ' I can’t see that channel yet, though: give me the View Channel permission.';
      return respondEphemeral(
        interaction,
        `I will read new messages in <#${channel.id}> aloud while I am in voice (/join brings me).${warning}`,
      );
    }
  }
}

async function changeSettings(
  interaction: ChatInputCommandInteraction<'cached'>,
  store: AutoReadStore,
): Promise<void> {
  const options = interaction.options;
  const prefix = options.getString('prefix')?.trim();
  const patch: AutoReadSettingsPatch = withoutUndefined({
    readVoiceChat: options.getBoolean('voice-chat') ?? undefined,
    onlySameVoice: options.getBoolean('same-voice-only') ?? undefined,
    ignoreBots: options.getBoolean('ignore-bots') ?? undefined,
    prefix:
      prefix === undefined ? undefined : prefix.toLowerCase() === NO_PREFIX || prefix === '' ? '' : prefix,
    skipSilent: options.getBoolean('skip-silent') ?? undefined,
    announceAuthor: options.getBoolean('announce-author') ?? undefined,
    authorWindowSeconds: options.getInteger('author-window') ?? undefined,
    maxChars: options.getInteger('max-chars') ?? undefined,
    emoji: (options.getString('emoji') ?? undefined) as AutoReadEmoji | undefined,
    linkDomains: options.getBoolean('link-domains') ?? undefined,
    autoJoin: options.getBoolean('auto-join') ?? undefined,
  });
  if (Object.keys(patch).length === 0) {
    const settings = await store.settings(interaction.guildId);
    return respondEphemeral(
      interaction,
      `Nothing to change: give at least one option.\n\n${describeSettings(settings, undefined)}`,
    );
  }
  const settings = await store.update(interaction.guildId, patch);
  return respondEphemeral(interaction, `Saved.\n\n${describeSettings(settings, undefined)}`);
}

/** The settings as members read them; `optedOut` undefined leaves out the line about the member. */
export function describeSettings(settings: AutoReadSettings, optedOut: boolean | undefined): string {
  const channels = settings.channelIds.map((id) => `<#${id}>`).join(', ');
  const lines = [
    '**Auto-read in this server** (only while I am in voice; /join brings me)',
    `• Channels: ${channels === '' ? 'none yet (/autoread channel)' : channels}`,
    `• My voice channel’s own chat: ${settings.readVoiceChat ? 'read' : 'not read'}`,
    `• Who: ${settings.onlySameVoice ? 'only members in my voice channel' : 'everyone who writes there'}`,
    `• Bots and webhooks: ${settings.ignoreBots ? 'ignored' : 'read'}`,
    `• Ignore prefix: ${settings.prefix === '' ? 'none' : `messages starting with “${escapeMarkdown(settings.prefix)}” are not read`}`,
    `• @silent messages: ${settings.skipSilent ? 'skipped' : 'read'}`,
    `• Author’s name: ${settings.announceAuthor ? `said, unless they were read in the last ${settings.authorWindowSeconds} s` : 'not said'}`,
    `• Length: at most ${settings.maxChars} characters per message`,
    `• Emoji: ${settings.emoji === 'name' ? 'read by name' : 'left out'}`,
    `• Links: ${settings.linkDomains ? '“a link to example.com”' : '“a link”'}`,
    `• Auto-join: ${settings.autoJoin ? 'on: a message in a read channel, or a member joining a read voice channel, brings me into their voice channel' : 'off (/join or /speak brings me)'}`,
  ];
  if (optedOut !== undefined) {
    lines.push(`• You: ${optedOut ? 'not read (/autoread me enabled:true to change)' : 'read'}`);
  }
  return lines.join('\n');
}

function withoutUndefined<T extends object>(value: { [K in keyof T]: T[K] | undefined }): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
