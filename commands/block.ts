import {
  ActionRowBuilder,
  ButtonBuilder,
  type ButtonInteraction,
  ButtonStyle,
  InteractionContextType,
  MessageFlags,
  PermissionFlagsBits,
  SlashCommandBuilder,
} from 'discord.js';
import type { Command, Deps } from '../src/command.ts';
import { pageLines } from '../src/pages.ts';
import { NO_MENTIONS, respondEphemeral } from '../src/replies.ts';

const NAME = 'block';
/** Members per page of `/block list` at most. */
const PAGE_SIZE = 40;

export const block = {
  data: new SlashCommandBuilder()
    .setName(NAME)
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
      const list = await renderList(deps, interaction.guildId, 0);
      await interaction.reply({ ...list, flags: MessageFlags.Ephemeral });
      return;
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

  async button(interaction: ButtonInteraction<'cached'>, deps: Deps) {
    // Custom id: block:<page>.
    const page = Number.parseInt(interaction.customId.split(':')[1] ?? '0', 10) || 0;
    await interaction.update(await renderList(deps, interaction.guildId, page));
  },
} satisfies Command;

async function renderList(deps: Deps, guildId: string, requestedPage: number) {
  const blocked = await deps.members.blockedMembers(guildId);
  const paged = pageLines(
    blocked.map((id) => `• <@${id}>`),
    PAGE_SIZE,
  );
  const pages = paged.length;
  const page = Math.min(Math.max(requestedPage, 0), pages - 1);
  const content =
    blocked.length === 0
      ? 'Nobody is blocked in this server.'
      : [
          `**Blocked members** · page ${page + 1} of ${pages} · ${blocked.length} in all · /unblock lifts it`,
          ...(paged[page] ?? []),
        ].join('\n');
  const components =
    pages > 1
      ? [
          new ActionRowBuilder<ButtonBuilder>().addComponents(
            new ButtonBuilder()
              .setCustomId(`${NAME}:${page - 1}`)
              .setLabel('Previous')
              .setStyle(ButtonStyle.Secondary)
              .setDisabled(page === 0),
            new ButtonBuilder()
              .setCustomId(`${NAME}:${page + 1}`)
              .setLabel('Next')
              .setStyle(ButtonStyle.Secondary)
              .setDisabled(page >= pages - 1),
          ),
        ]
      : [];
  return { content, components, allowedMentions: NO_MENTIONS };
}
