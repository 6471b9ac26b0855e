import {
  ActionRowBuilder,
  ButtonBuilder,
  type ButtonInteraction,
  ButtonStyle,
  InteractionContextType,
  MessageFlags,
  SlashCommandBuilder,
} from 'discord.js';
import type { Command, Deps } from '../src/discord/command.ts';

const NAME = 'forget-me';
const CONFIRM = 'confirm';
const CANCEL = 'cancel';

/** What /forget-me deletes and keeps, said before the member confirms and again after. */
const WHAT = [
  'Herald will delete what it keeps about you **in every server**: the voice you chose, your spoken name and your temperature.',
  'It keeps: block list entries naming you (the server’s moderators decided them), your choice not to be read aloud (deleting it would start reading you again), and the money records of what your speech cost (ids and amounts, no text).',
  'Herald never stores what you said: queued speech is gone once said, and the audio cache names its files by a one-way hash of the text.',
].join('\n');

/**
 * `/forget-me`: a member deletes what Herald keeps about them, in every server at once, after a confirmation
 * button. Nothing is asked of the TTS service.
 */
export const forgetMe = {
  data: new SlashCommandBuilder()
    .setName(NAME)
    .setDescription(
      'Delete what Herald keeps about you (your voice, spoken name, temperature) in every server.',
    )
    .setContexts(InteractionContextType.Guild),

  async execute(interaction) {
    const row = new ActionRowBuilder<ButtonBuilder>().addComponents(
      new ButtonBuilder()
        .setCustomId(`${NAME}:${CONFIRM}`)
        .setLabel('Delete my data')
        .setStyle(ButtonStyle.Danger),
      new ButtonBuilder()
        .setCustomId(`${NAME}:${CANCEL}`)
        .setLabel('Keep it')
        .setStyle(ButtonStyle.Secondary),
    );
    await interaction.reply({ content: WHAT, components: [row], flags: MessageFlags.Ephemeral });
  },

  async button(interaction: ButtonInteraction<'cached'>, deps: Deps) {
    const choice = interaction.customId.split(':')[1];
    if (choice !== CONFIRM) {
      await interaction.update({ content: 'Nothing was deleted.', components: [] });
      return;
    }
    const rows = await deps.privacy.forgetMember(interaction.user.id);
    deps.logger.info('a member deleted their data', { rows });
    await interaction.update({
      content:
        rows === 0
          ? 'Herald kept nothing of yours to delete (no voice, spoken name or temperature in any server).'
          : 'Deleted: your voice, spoken name and temperature in every server. Block list entries and your choice not to be read aloud stay, as said.',
      components: [],
    });
  },
} satisfies Command;
