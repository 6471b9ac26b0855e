import {
  ActionRowBuilder,
  ButtonBuilder,
  type ButtonInteraction,
  ButtonStyle,
  type ChatInputCommandInteraction,
  EmbedBuilder,
  escapeMarkdown,
  InteractionContextType,
  MessageFlags,
  PermissionFlagsBits,
  SlashCommandBuilder,
} from 'discord.js';
import type { Command, Deps } from '../src/discord/command.ts';
import { describeFailure, NO_MENTIONS, respondEphemeral } from '../src/discord/replies.ts';
import { resolveTemperature } from '../src/members/index.ts';
import { previewRequest } from '../src/members/preview.ts';
import { describeLanguages, findSpeaker } from '../src/members/speakers.ts';
import type { Speaker } from '../src/tts/index.ts';
import { describeJoinRefusal, describeQueueFull, speakerAutocomplete } from './shared.ts';

/** Speakers per page: each line is short, so ten keep a page readable and far below the 4,096-character limit. */
const PAGE_SIZE = 10;
const NAME = 'voices';

export const voices = {
  data: new SlashCommandBuilder()
    .setName(NAME)
    .setDescription('List the voices Herald can speak with.')
    .setContexts(InteractionContextType.Guild)
    .addStringOption((option) =>
      option.setName('search').setDescription('Only voices whose name contains this').setMaxLength(50),
    )
    .addStringOption((option) =>
      option
        .setName('preview')
        .setDescription('Hear this voice say a short sentence (in your voice channel, or as a file)')
        .setAutocomplete(true),
    ),

  async execute(interaction, deps) {
    const wanted = interaction.options.getString('preview');
    if (wanted !== null) return preview(interaction, deps, wanted);
    const search = interaction.options.getString('search') ?? '';
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    await interaction.editReply(await renderPage(interaction, deps, search, 0));
  },

  async button(interaction: ButtonInteraction<'cached'>, deps: Deps) {
    // Custom id: voices:<page>:<search>; the search is kept so paging keeps the filter.
    const [, pageText = '0', ...rest] = interaction.customId.split(':');
    const page = Number.parseInt(pageText, 10) || 0;
    await interaction.update(await renderPage(interaction, deps, rest.join(':'), page));
  },

  autocomplete: speakerAutocomplete,
} satisfies Command;

/**
 * `/voices preview`: a fixed sentence in the member's voice and temperature, played in their voice channel or,
 * when they are not in voice, attached as a file. Paid once per voice and temperature, then cached.
 */
async function preview(
  interaction: ChatInputCommandInteraction<'cached'>,
  deps: Deps,
  wanted: string,
): Promise<void> {
  const { guildId, user } = interaction;
  // The voice list and a join may wait on the network: acknowledge within Discord's 3 s first.
  await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  if (await deps.members.blocked(guildId, user.id)) {
    return respondEphemeral(
      interaction,
      'An admin of this server has blocked you from having Herald speak for you here.',
    );
  }
  const speaker = findSpeaker(await deps.tts.speakers(), wanted);
  if (!speaker) return respondEphemeral(interaction, `There is no voice called “${wanted}”. See /voices.`);
  const temperature =
    deps.ttsForm === 'variant' ? undefined : await resolveTemperature(deps.members, guildId, user.id);
  const requestedBy = { id: user.id, name: interaction.member.displayName };
  const channel = interaction.member.voice.channel;
  if (channel) {
    const outcome = deps.voice.join(channel, interaction.channel ?? undefined);
    if (outcome.kind !== 'joined' && outcome.kind !== 'already-here') {
      return respondEphemeral(interaction, describeJoinRefusal(outcome));
    }
    let acknowledged: Promise<void> = new Promise(() => {});
    const queued = outcome.session.enqueue(
      previewRequest(speaker, temperature, requestedBy, (error) => {
        acknowledged
          .then(() =>
            respondEphemeral(interaction, `The preview failed: ${describeFailure(error, deps.logger)}`),
          )
          .catch((followUpError: unknown) =>
            deps.logger.warn('could not report a failed preview', { err: followUpError }),
          );
      }),
    );
    if (queued.kind === 'queue-full') return respondEphemeral(interaction, describeQueueFull(queued));
    acknowledged = respondEphemeral(interaction, `Previewing ${speaker.name} in <#${channel.id}>.`);
    return acknowledged;
  }
  try {
    const file = await deps.renderPreviewFile(
      previewRequest(speaker, temperature, requestedBy, () => {}),
      guildId,
    );
    await interaction.editReply({
      content: `${speaker.name}, as a file because you are not in a voice channel.`,
      files: [{ attachment: file.audio, name: file.name }],
      allowedMentions: NO_MENTIONS,
    });
  } catch (error) {
    await respondEphemeral(interaction, `The preview failed: ${describeFailure(error, deps.logger)}`);
  }
}

interface Page {
  readonly content: string;
  readonly embeds: EmbedBuilder[];
  readonly components: ActionRowBuilder<ButtonBuilder>[];
  readonly allowedMentions: typeof NO_MENTIONS;
}

interface Caller {
  readonly guildId: string;
  readonly user: { readonly id: string };
  readonly memberPermissions: { has(flag: bigint): boolean } | null;
}

async function renderPage(caller: Caller, deps: Deps, search: string, requestedPage: number): Promise<Page> {
  const [speakers, settings, mine] = await Promise.all([
    deps.tts.speakers(),
    deps.settings.guild(caller.guildId),
    deps.settings.memberSpeaker(caller.guildId, caller.user.id),
  ]);
  const query = search.trim().toLowerCase();
  const matching = query ? speakers.filter((s) => s.name.toLowerCase().includes(query)) : [...speakers];
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const page = Math.min(Math.max(requestedPage, 0), pages - 1);
  const shown = matching.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);

  const notes: string[] = [];
  const isAdmin = caller.memberPermissions?.has(PermissionFlagsBits.ManageGuild) ?? false;
  if (isAdmin && settings.defaultSpeakerId && !speakers.some((s) => s.id === settings.defaultSpeakerId)) {
    notes.push(
      '⚠️ This server’s default voice is no longer offered by the speech service; Herald falls back to the next choice. Set a new one with /voice-set.',
    );
  }
  if (mine && !speakers.some((s) => s.id === mine)) {
    notes.push('⚠️ Your own voice is no longer offered; choose another with /voice-set scope:me.');
  }
  if (deps.ttsForm === 'variant') {
    notes.push('ℹ️ This speech service has no temperature: /voice-tune settings are kept but not used.');
  } else {
    const temperature = await resolveTemperature(deps.members, caller.guildId, caller.user.id);
    if (temperature !== undefined) notes.push(`Your temperature: ${temperature.toFixed(2)} (/voice-tune).`);
  }
  notes.push('Hear a voice first with /voices preview.');

  const lines = shown.map((speaker) => line(speaker, settings.defaultSpeakerId, mine));
  const embed = new EmbedBuilder()
    .setTitle(query ? `Voices matching “${search.trim()}”` : 'Voices')
    .setDescription(lines.length > 0 ? lines.join('\n') : 'No voice matches that search.')
    .setFooter({
      text: `Page ${page + 1} of ${pages} · ${matching.length} voice${matching.length === 1 ? '' : 's'} · ⭐ server default · 🎙️ your voice`,
    });

  const components =
    pages > 1
      ? [
          new ActionRowBuilder<ButtonBuilder>().addComponents(
            new ButtonBuilder()
              .setCustomId(`${NAME}:${page - 1}:${search}`.slice(0, 100))
              .setLabel('Previous')
              .setStyle(ButtonStyle.Secondary)
              .setDisabled(page === 0),
            new ButtonBuilder()
              .setCustomId(`${NAME}:${page + 1}:${search}`.slice(0, 100))
              .setLabel('Next')
              .setStyle(ButtonStyle.Secondary)
              .setDisabled(page >= pages - 1),
          ),
        ]
      : [];
  return { content: notes.join('\n'), embeds: [embed], components, allowedMentions: NO_MENTIONS };
}

function line(speaker: Speaker, serverDefault: string | null, mine: string | null): string {
  const marks = `${speaker.id === serverDefault ? ' ⭐' : ''}${speaker.id === mine ? ' 🎙️' : ''}`;
  const gender = speaker.gender ?? 'unspecified';
  return `**${escapeMarkdown(speaker.name)}**${marks} — ${escapeMarkdown(gender)} · languages: ${escapeMarkdown(describeLanguages(speaker))}`;
}
