import {
  type ButtonInteraction,
  InteractionContextType,
  PermissionFlagsBits,
  SlashCommandBuilder,
} from 'discord.js';
import type { Command, Deps } from '../src/discord/command.ts';
import { pageButtons, paginate } from '../src/discord/pages.ts';
import { NO_MENTIONS, respondEphemeral } from '../src/discord/replies.ts';

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
      const { content, components } = await renderList(deps, interaction.guildId, 0);
      return respondEphemeral(interaction, content, { components });
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
    // Custom id: block:<page>. Paging shows the list to whoever holds it; /block list asked for Manage Server.
    const page = Number.parseInt(interaction.customId.split(':')[1] ?? '0', 10) || 0;
    await interaction.update({
      ...(await renderList(deps, interaction.guildId, page)),
      allowedMentions: NO_MENTIONS,
    });
  },
} satisfies Command;

/** Blocked members per page: mentions are about 25 characters, so 40 fit a message whatever their ids. */
const PAGE_SIZE = 40;

/** One page of the block list, with buttons when there are several. */
async function renderList(deps: Deps, guildId: string, requestedPage: number) {
  const blocked = await deps.members.blockedMembers(guildId);
  const pages = paginate(
    blocked.map((id) => `• <@${id}>`),
    { maxLines: PAGE_SIZE, reserve: 100 },
  );
  const page = Math.min(Math.max(requestedPage, 0), pages.length - 1);
  const content =
    blocked.length === 0
      ? 'Nobody is blocked in this server.'
      : [
          `**Blocked** · page ${page + 1} of ${pages.length} · ${blocked.length} member${blocked.length === 1 ? '' : 's'} · /unblock lifts it`,
          ...(pages[page] ?? []),
        ].join('\n');
  return { content, components: pageButtons('block', page, pages.length) };
}
