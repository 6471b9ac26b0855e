import { InteractionContextType, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';

export const skip = {
  data: new SlashCommandBuilder()
    .setName('skip')
    .setDescription('Skip what Herald is saying now.')
    .setContexts(InteractionContextType.Guild),

  async execute(interaction, deps) {
    const skipped = deps.voice.get(interaction.guildId)?.skip() ?? false;
    return respondEphemeral(interaction, skipped ? 'Skipped.' : 'Nothing is being said right now.');
  },
} satisfies Command;
