import { InteractionContextType, PermissionFlagsBits, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';

export const block = {
  data: new SlashCommandBuilder()
    .setName('block')
    .setDescription('Stop Herald speaking for a member in this server.')
    .setContexts(InteractionContextType.Guild)
    .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
    .addSubcommand((sub) =>
      sub
        .setName('user')
        .setDescription('Their messages are not read and their /speak is refused.')
        .addUserOption((option) => option.setName('user').setDescription('The member').setRequired(true)),
    )
    .addSubcommand((sub) => sub.setName('list').setDescription('The members Herald does not speak for.')),

  async execute(interaction, deps) {
    // Discord hides the command from members without Manage Server; checked again, as admins can change that.
    if (!interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
      return respondEphemeral(interaction, '/block needs the Manage Server permission.');
    }
    if (interaction.options.getSubcommand(true) === 'list') {
      const blocked = await deps.members.blockedMembers(interaction.guildId);
      return respondEphemeral(
        interaction,
        blocked.length === 0
          ? 'Nobody is blocked in this server.'
          : `Blocked: ${blocked.map((id) => `<@${id}>`).join(', ')}. /unblock lifts it.`,
      );
    }
    const user = interaction.options.getUser('user', true);
    const changed = await deps.members.setBlocked(interaction.guildId, user.id, true);
    return respondEphemeral(
      interaction,
      changed
        ? `Blocked <@${user.id}>: I will not read their messages or speak for them here. /unblock lifts it.`
        : `<@${user.id}> was already blocked.`,
    );
  },
} satisfies Command;
