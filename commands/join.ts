import { InteractionContextType, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';
import { describeJoinRefusal } from './shared.ts';

export const join = {
  data: new SlashCommandBuilder()
    .setName('join')
    .setDescription('Bring Herald into your voice channel.')
    .setContexts(InteractionContextType.Guild),

  async execute(interaction, deps) {
    const channel = interaction.member.voice.channel;
    if (!channel) return respondEphemeral(interaction, 'Join a voice channel first, then use /join.');
    const outcome = deps.voice.join(channel, interaction.channel ?? undefined);
    switch (outcome.kind) {
      case 'joined':
        return respondEphemeral(interaction, `Joined ${channel.name}.`);
      case 'already-here':
        return respondEphemeral(interaction, `I am already in ${channel.name}.`);
      default:
        return respondEphemeral(interaction, describeJoinRefusal(outcome));
    }
  },
} satisfies Command;
