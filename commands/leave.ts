import { InteractionContextType, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';

export const leave = {
  data: new SlashCommandBuilder()
    .setName('leave')
    .setDescription('Make Herald leave voice and forget its queue.')
    .setContexts(InteractionContextType.Guild),

  async execute(interaction, deps) {
    const left = deps.voice.leave(interaction.guildId);
    return respondEphemeral(interaction, left ? 'Left the voice channel.' : 'I am not in a voice channel.');
  },
} satisfies Command;
