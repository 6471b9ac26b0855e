import { InteractionContextType, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';

export const stop = {
  data: new SlashCommandBuilder()
    .setName('stop')
    .setDescription('Stop speaking and clear this server’s queue.')
    .setContexts(InteractionContextType.Guild),

  async execute(interaction, deps) {
    const dropped = deps.voice.get(interaction.guildId)?.stop() ?? 0;
    return respondEphemeral(
      interaction,
      dropped === 0 ? 'Nothing to stop.' : `Stopped; ${dropped} message${dropped === 1 ? '' : 's'} cleared.`,
    );
  },
} satisfies Command;
