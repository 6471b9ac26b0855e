import {
  type ButtonInteraction,
  escapeMarkdown,
  InteractionContextType,
  MessageFlags,
  PermissionFlagsBits,
  SlashCommandBuilder,
} from 'discord.js';
import type { Command, Deps } from '../src/discord/command.ts';
import { pageButtons, paginate } from '../src/discord/pages.ts';
import { NO_MENTIONS, respondEphemeral } from '../src/discord/replies.ts';
import { MEMBER_LIMITS } from '../src/members/index.ts';

const NAME = 'dictionary';
/** Entries per page: short lines, far below the 2,000-character message limit. */
const PAGE_SIZE = 20;
/** Room kept for the page's header line. */
const HEADER_CHARS = 100;

export const dictionary = {
  data: new SlashCommandBuilder()
    .setName(NAME)
    .setDescription('How Herald pronounces words in this server.')
    .setContexts(InteractionContextType.Guild)
    // No default member permissions: `list` is for everyone, so the handler checks Manage Server for changes.
    .addSubcommand((sub) =>
      sub
        .setName('add')
        .setDescription('Say a word differently. Needs Manage Server.')
        .addStringOption((option) =>
          option
            .setName('word')
            .setDescription('The word (or phrase) as members write it')
            .setRequired(true)
            .setMaxLength(MEMBER_LIMITS.dictionaryChars),
        )
        .addStringOption((option) =>
          option
            .setName('spoken')
            .setDescription('How Herald should say it')
            .setRequired(true)
            .setMaxLength(MEMBER_LIMITS.dictionaryChars),
        ),
    )
    .addSubcommand((sub) =>
      sub
        .setName('remove')
        .setDescription('Forget a word. Needs Manage Server.')
        .addStringOption((option) =>
          option.setName('word').setDescription('The word to forget').setRequired(true),
        ),
    )
    .addSubcommand((sub) => sub.setName('list').setDescription('The words Herald says differently here.')),

  async execute(interaction, deps) {
    const subcommand = interaction.options.getSubcommand(true);
    if (subcommand === 'list') {
      await interaction.reply({
        ...(await renderList(deps, interaction.guildId, 0)),
        flags: MessageFlags.Ephemeral,
      });
      return;
    }
    if (!interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
      return respondEphemeral(interaction, 'Changing the dictionary needs the Manage Server permission.');
    }
    const word = interaction.options.getString('word', true).trim();
    if (subcommand === 'remove') {
      const removed = await deps.members.removeWord(interaction.guildId, word);
      return respondEphemeral(
        interaction,
        removed ? `Forgot “${escapeMarkdown(word)}”.` : `“${escapeMarkdown(word)}” is not in the dictionary.`,
      );
    }
    const spoken = interaction.options.getString('spoken', true).trim();
    const outcome = await deps.members.addWord(interaction.guildId, word, spoken);
    switch (outcome.kind) {
      case 'added':
        return respondEphemeral(
          interaction,
          `I will say “${escapeMarkdown(word)}” as “${escapeMarkdown(spoken)}”.`,
        );
      case 'replaced':
        return respondEphemeral(
          interaction,
          `I will say “${escapeMarkdown(word)}” as “${escapeMarkdown(spoken)}” (it was “${escapeMarkdown(outcome.previous)}”).`,
        );
      case 'full':
        return respondEphemeral(
          interaction,
          `The dictionary is full: a server can have at most ${outcome.limit} words. Remove one first (/dictionary remove).`,
        );
      case 'too-long':
        return respondEphemeral(
          interaction,
          `A word and its spoken form may have at most ${outcome.limit} characters each.`,
        );
      case 'empty':
        return respondEphemeral(interaction, 'Both the word and how to say it need some text.');
    }
  },

  async button(interaction: ButtonInteraction<'cached'>, deps: Deps) {
    // Custom id: dictionary:<page>.
    const page = Number.parseInt(interaction.customId.split(':')[1] ?? '0', 10) || 0;
    await interaction.update(await renderList(deps, interaction.guildId, page));
  },
} satisfies Command;

async function renderList(deps: Deps, guildId: string, requestedPage: number) {
  const entries = await deps.members.dictionary(guildId);
  // Pages by count and by length: 20 words of 100 characters each would not fit one message.
  const pages = paginate(
    entries.map((entry) => `• ${escapeMarkdown(entry.word)} → ${escapeMarkdown(entry.spoken)}`),
    { maxLines: PAGE_SIZE, reserve: HEADER_CHARS },
  );
  const page = Math.min(Math.max(requestedPage, 0), pages.length - 1);
  const content =
    entries.length === 0
      ? 'The dictionary is empty. Admins add words with /dictionary add.'
      : [
          `**Pronunciation dictionary** · page ${page + 1} of ${pages.length} · ${entries.length} of ${MEMBER_LIMITS.dictionaryEntries} words`,
          ...(pages[page] ?? []),
        ].join('\n');
  return { content, components: pageButtons(NAME, page, pages.length), allowedMentions: NO_MENTIONS };
}
