import { InteractionContextType, PermissionFlagsBits, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { acknowledgeEphemeral, respondEphemeral } from '../src/discord/replies.ts';
import { findSpeaker } from '../src/members/speakers.ts';
import { speakerAutocomplete } from './shared.ts';

export const voiceSet = {
  data: new SlashCommandBuilder()
    .setName('voice-set')
    .setDescription('Choose the voice Herald speaks with in this server, or your own voice.')
    .setContexts(InteractionContextType.Guild)
    // Discord hides `scope:server` from members without Manage Server; the handler checks again, because admins
    // can change command permissions per server.
    .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
    .addStringOption((option) =>
      option.setName('speaker').setDescription('Voice name or id').setRequired(true).setAutocomplete(true),
    )
    .addStringOption((option) =>
      option
        .setName('scope')
        .setDescription('The server default (needs Manage Server) or just your own voice')
        .addChoices({ name: 'server', value: 'server' }, { name: 'me', value: 'me' }),
    ),

  async execute(interaction, deps) {
    const scope = interaction.options.getString('scope') ?? 'server';
    const wanted = interaction.options.getString('speaker', true);
    if (scope === 'server' && !interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
      return respondEphemeral(
        interaction,
        'Setting the server’s voice needs the Manage Server permission. Use scope:me to choose your own voice.',
      );
    }
    // The voice list may have to be fetched: acknowledge within Discord's 3 s first.
    const reply = acknowledgeEphemeral(interaction, deps.logger);
    const speaker = findSpeaker(await deps.tts.speakers(), wanted);
    if (!speaker) return reply(`There is no voice called “${wanted}”. See /voices.`);

    if (scope === 'server') {
      await deps.settings.setGuildSpeaker(interaction.guildId, speaker.id);
      return reply(`The server’s voice is now ${speaker.name}.`);
    }
    await deps.settings.setMemberSpeaker(interaction.guildId, interaction.user.id, speaker.id);
    return reply(`Your voice in this server is now ${speaker.name}.`);
  },

  autocomplete: speakerAutocomplete,
} satisfies Command;
