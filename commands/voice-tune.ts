import { InteractionContextType, PermissionFlagsBits, SlashCommandBuilder } from 'discord.js';
import type { Command } from '../src/discord/command.ts';
import { respondEphemeral } from '../src/discord/replies.ts';
import { MEMBER_LIMITS } from '../src/members/index.ts';

const { min, max } = MEMBER_LIMITS.temperature;

export const voiceTune = {
  data: new SlashCommandBuilder()
    .setName('voice-tune')
    .setDescription('How lively your voice sounds (the service’s temperature), or the server’s default.')
    .setContexts(InteractionContextType.Guild)
    .addNumberOption((option) =>
      option
        .setName('temperature')
        .setDescription(`${min} steady … 1.0 normal … ${max} lively; leave out to go back to the default`)
        .setMinValue(min)
        .setMaxValue(max),
    )
    .addStringOption((option) =>
      option
        .setName('scope')
        .setDescription('Just you (default), or the server default (needs Manage Server)')
        .addChoices({ name: 'me', value: 'me' }, { name: 'server', value: 'server' }),
    ),

  async execute(interaction, deps) {
    const scope = interaction.options.getString('scope') ?? 'me';
    const temperature = interaction.options.getNumber('temperature');
    if (scope === 'server' && !interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
      return respondEphemeral(
        interaction,
        'Setting the server’s temperature needs the Manage Server permission. Leave out scope to tune your own voice.',
      );
    }
    if (temperature !== null && !(temperature >= min && temperature <= max)) {
      return respondEphemeral(interaction, `The temperature must be from ${min} to ${max}.`);
    }
    const rounded = temperature === null ? null : Math.round(temperature * 100) / 100;
    if (scope === 'server') await deps.members.setGuildTemperature(interaction.guildId, rounded);
    else await deps.members.setMemberTemperature(interaction.guildId, interaction.user.id, rounded);
    const subject = scope === 'server' ? 'The server’s default temperature' : 'Your temperature';
    const note =
      deps.ttsForm === 'variant'
        ? ' Note: this speech service has no temperature, so it is stored but not used.'
        : '';
    return respondEphemeral(
      interaction,
      rounded === null
        ? `${subject} is back to the default.${note}`
        : `${subject} is now ${rounded.toFixed(2)}.${note}`,
    );
  },
} satisfies Command;
