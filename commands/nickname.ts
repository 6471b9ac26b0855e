import { escapeMarkdown, InteractionContextType, PermissionFlagsBits, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';
import { MEMBER_LIMITS } from '../src/members/index.ts';

export const nickname = {
  data: new SlashCommandBuilder()
    .setName('nickname')
    .setDescription('The name Herald says before your messages.')
    .setContexts(InteractionContextType.Guild)
    .addSubcommand((sub) =>
      sub
        .setName('set')
        .setDescription('Choose the name Herald says for you (admins: for anyone).')
        .addStringOption((option) =>
          option
            .setName('name')
            .setDescription('How to say it')
            .setRequired(true)
            .setMaxLength(MEMBER_LIMITS.spokenNameChars),
        )
        .addUserOption((option) =>
          option.setName('member').setDescription('Someone else (needs Manage Server)'),
        ),
    )
    .addSubcommand((sub) =>
      sub
        .setName('clear')
        .setDescription('Go back to the server nickname (admins: for anyone).')
        .addUserOption((option) =>
          option.setName('member').setDescription('Someone else (needs Manage Server)'),
        ),
    ),

  async execute(interaction, deps) {
    const target = interaction.options.getUser('member') ?? interaction.user;
    const self = target.id === interaction.user.id;
    if (!self && !interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
      return respondEphemeral(
        interaction,
        'Choosing someone else’s spoken name needs the Manage Server permission. Leave out `member` to set your own.',
      );
    }
    const whose = self ? 'your' : `<@${target.id}>’s`;
    if (interaction.options.getSubcommand(true) === 'clear') {
      await deps.members.setSpokenName(interaction.guildId, target.id, null);
      return respondEphemeral(interaction, `I will say ${whose} server nickname again.`);
    }
    const name = interaction.options.getString('name', true).trim().replace(/\s+/g, ' ');
    if (name === '') return respondEphemeral(interaction, 'The name needs some text.');
    if ([...name].length > MEMBER_LIMITS.spokenNameChars) {
      return respondEphemeral(
        interaction,
        `A spoken name may have at most ${MEMBER_LIMITS.spokenNameChars} characters.`,
      );
    }
    await deps.members.setSpokenName(interaction.guildId, target.id, name);
    return respondEphemeral(interaction, `I will say ${whose} name as “${escapeMarkdown(name)}”.`);
  },
} satisfies Command;
