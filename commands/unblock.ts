import { InteractionContextType, PermissionFlagsBits, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';

export const unblock = {
  data: new SlashCommandBuilder()
    .setName('unblock')
    .setDescription('Let Herald speak for a blocked member again.')
    .setContexts(InteractionContextType.Guild)
    .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
    .addUserOption((option) => option.setName('user').setDescription('The member').setRequired(true)),

  async execute(interaction, deps) {
    if (!interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
      return respondEphemeral(interaction, '/unblock needs the Manage Server permission.');
    }
    const user = interaction.options.getUser('user', true);
    const changed = await deps.members.setBlocked(interaction.guildId, user.id, false);
    return respondEphemeral(
      interaction,
      changed ? `Unblocked <@${user.id}>.` : `<@${user.id}> was not blocked.`,
    );
  },
} satisfies Command;
