import {
  ChannelType,
  InteractionContextType,
  MessageFlags,
  PermissionFlagsBits,
  SlashCommandBuilder,
} from 'discord.js';
import {
  type BlockReason,
  type BudgetStatus,
  type DailySpend,
  formatUsd,
  type GuildBudgetSettings,
  type RecheckOutcome,
  utcDay,
} from '../src/budget/index.ts';
import type { CacheSavings } from '../src/cache/index.ts';
import type { Command, Deps } from '../src/discord/command.ts';
import { formatCount } from '../src/discord/member-facing.ts';
import { respondEphemeral } from '../src/discord/replies.ts';

/** Member lines shown by `/budget show`; keeps the reply far below Discord's 2,000-character limit. */
const MAX_MEMBER_LINES = 15;

export const budget = {
  data: new SlashCommandBuilder()
    .setName('budget')
    .setDescription('Herald’s speech budget: balance, floor, spend and caps.')
    .setContexts(InteractionContextType.Guild)
    // Discord hides the command from members without Manage Server; the handler checks again, because admins can
    // change command permissions per server. `recheck` is for the bot's operator whatever their permissions.
    .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
    .addSubcommand((sub) =>
      sub.setName('show').setDescription('The balance, the floor, the price and this server’s spend today.'),
    )
    .addSubcommand((sub) =>
      sub
        .setName('recheck')
        .setDescription(
          'Operator only: read the balance with the cheapest paid call; resumes after a top-up.',
        ),
    )
    .addSubcommand((sub) =>
      sub
        .setName('cap')
        .setDescription('Limit what this server may spend per day (UTC); 0 removes the cap.')
        .addNumberOption((option) =>
          option
            .setName('usd')
            .setDescription('US dollars per day; 0 for no cap')
            .setRequired(true)
            .setMinValue(0),
        ),
    )
    .addSubcommand((sub) =>
      sub
        .setName('alerts')
        .setDescription('Where budget warnings go for this server; leave out the channel to stop them.')
        .addChannelOption((option) =>
          option
            .setName('channel')
            .setDescription('A text channel Herald can post in')
            .addChannelTypes(ChannelType.GuildText),
        ),
    )
    .addSubcommand((sub) =>
      sub
        .setName('cache')
        .setDescription('Keep generated speech of this server’s members to replay it without paying again.')
        .addBooleanOption((option) =>
          option
            .setName('enabled')
            .setDescription('False: never store this server’s speech; every message is paid for')
            .setRequired(true),
        ),
    ),

  // `Deps & BudgetDeps` until the composition root merges BudgetDeps into Deps.
  async execute(interaction, deps: Deps) {
    const subcommand = interaction.options.getSubcommand();
    if (subcommand === 'recheck') {
      await interaction.deferReply({ flags: MessageFlags.Ephemeral });
      if (!(await deps.isOperator(interaction.user.id))) {
        return respondEphemeral(interaction, 'Only the bot’s operator can run /budget recheck.');
      }
      const outcome = await deps.budget.recheck(deps.budgetProbe, {
        guildId: interaction.guildId,
        userId: interaction.user.id,
      });
      return respondEphemeral(interaction, describeRecheck(outcome));
    }
    if (!interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
      return respondEphemeral(interaction, '/budget needs the Manage Server permission.');
    }
    switch (subcommand) {
      case 'show': {
        const [savings, cacheOn] = await Promise.all([
          deps.cache.savings(interaction.guildId, utcDay(Date.now())),
          deps.cache.guildEnabled(interaction.guildId),
        ]);
        return respondEphemeral(
          interaction,
          [
            renderBudget(
              await deps.budget.status(),
              await deps.budget.spendToday(interaction.guildId),
              await deps.budget.guildSettings(interaction.guildId),
              deps.budgetAlertChannelId,
            ),
            '',
            renderCacheSavings(savings, cacheOn && deps.cacheEnabled),
          ].join('\n'),
        );
      }
      case 'cache': {
        const enabled = interaction.options.getBoolean('enabled', true);
        await deps.cache.setGuildEnabled(interaction.guildId, enabled);
        return respondEphemeral(
          interaction,
          enabled
            ? `Herald now keeps this server’s short utterances (up to ${deps.cacheMaxChars} characters) and replays them without paying again.${deps.cacheEnabled ? '' : ' The operator has the audio cache turned off, so this waits until it is on.'}`
            : 'Herald no longer stores this server’s speech: every message is generated, and paid for, again.',
        );
      }
      case 'cap': {
        const usd = interaction.options.getNumber('usd', true);
        if (!Number.isFinite(usd) || usd < 0) {
          return respondEphemeral(interaction, 'The cap must be 0 (no cap) or a positive amount of dollars.');
        }
        await deps.budget.setDailyCap(interaction.guildId, usd === 0 ? null : usd);
        return respondEphemeral(
          interaction,
          usd === 0
            ? 'This server no longer has a daily speech cap.'
            : `This server may now spend at most ${formatUsd(usd)} on speech per day (UTC).`,
        );
      }
      case 'alerts': {
        const channel = interaction.options.getChannel('channel', false, [ChannelType.GuildText]);
        await deps.budget.setAlertChannel(interaction.guildId, channel?.id ?? null);
        const override =
          deps.budgetAlertChannelId === undefined
            ? ''
            : ` The operator sends every alert to <#${deps.budgetAlertChannelId}>, so this setting waits until that changes.`;
        return respondEphemeral(
          interaction,
          channel
            ? `Budget warnings for this server will go to <#${channel.id}>.${override}`
            : 'This server no longer receives budget warnings.',
        );
      }
      default:
        return respondEphemeral(interaction, 'I do not know that /budget subcommand.');
    }
  },
} satisfies Command;

/** The `/budget show` reply: account figures, then this server's spend today with per-member lines. */
const BLOCK_REASONS: Readonly<Record<BlockReason, string>> = {
  'floor-reached': 'the floor is reached',
  'service-refused': 'the service refused for lack of credit',
  'balance-unknown': 'the service reports no balance, so the floor cannot be checked',
};

export function renderBudget(
  status: BudgetStatus,
  spend: DailySpend,
  settings: GuildBudgetSettings,
  operatorAlertChannelId: string | undefined,
): string {
  const balance =
    status.balanceUsd === undefined
      ? 'unknown (no speech generated yet)'
      : `${formatUsd(status.balanceUsd)}${status.balanceSeenAt === undefined ? '' : `, seen ${timestamp(status.balanceSeenAt)}`}`;
  const price = `${formatUsd(status.pricePerCharUsd)} per character (${status.priceSource === 'assumed' ? 'assumed until the first generation' : status.priceSource})`;
  const state =
    status.status === 'active'
      ? 'speaking'
      : `stopped since ${timestamp(status.since)}: ${BLOCK_REASONS[status.reason]}; Herald checks again by itself, and the operator can run /budget recheck after a top-up`;
  const lines = [
    `**Account** · ${state}`,
    `Balance: ${balance}`,
    `Floor: ${formatUsd(status.floorUsd)}${status.warnUsd === undefined ? '' : ` · warning at ${formatUsd(status.warnUsd)}`}`,
    `Price: ${price}`,
    `Per member: at most ${formatCount(status.memberCharsPerMinute)} characters a minute`,
    ...(status.inFlight > 0
      ? [`In flight: ${status.inFlight} (${formatUsd(status.reservedUsd)} set aside)`]
      : []),
    ...(status.uncertain.generations > 0
      ? [
          `Uncertain: ${plural(status.uncertain.generations, 'generation')} cut off by a stop before the service's answer was recorded, counted at their most (${formatUsd(status.uncertain.upToUsd)})`,
        ]
      : []),
    '',
    `**This server today** (${spend.day}, UTC): ${formatUsd(spend.usd)} · ${formatCount(spend.characters)} characters · ${plural(spend.generations, 'generation')}`,
    `Daily cap: ${settings.dailyCapUsd === null ? 'none' : formatUsd(settings.dailyCapUsd)}`,
    `Alerts: ${alertDestination(settings, operatorAlertChannelId)}`,
    ...spend.members
      .slice(0, MAX_MEMBER_LINES)
      .map(
        (member) =>
          `• <@${member.userId}>: ${formatUsd(member.usd)} · ${formatCount(member.characters)} characters · ${plural(member.generations, 'generation')}`,
      ),
    ...(spend.members.length > MAX_MEMBER_LINES
      ? [`…and ${spend.members.length - MAX_MEMBER_LINES} more members`]
      : []),
  ];
  return lines.join('\n');
}

/** The audio cache lines of `/budget show`: what replaying instead of paying saved, today and in total. */
export function renderCacheSavings(
  savings: { readonly day: CacheSavings; readonly total: CacheSavings },
  active: boolean,
): string {
  const line = (s: CacheSavings): string =>
    `${plural(s.hits, 'hit')} · ${formatCount(s.characters)} characters · ${formatUsd(s.usd)} not spent`;
  return [
    `**Audio cache** · ${active ? 'on' : 'off'} for this server (/budget cache)`,
    `Saved today: ${line(savings.day)}`,
    `Saved in total: ${line(savings.total)}`,
  ].join('\n');
}

/** The `/budget recheck` reply. */
export function describeRecheck(outcome: RecheckOutcome): string {
  const balance = outcome.balanceUsd === undefined ? 'unknown' : formatUsd(outcome.balanceUsd);
  switch (outcome.kind) {
    case 'resumed':
      return `Herald speaks again: the balance is ${balance}, above the floor (${formatUsd(outcome.floorUsd)}).`;
    case 'still-blocked':
      return `Herald stays stopped: the balance is ${balance} and the floor is ${formatUsd(outcome.floorUsd)}. Top up the account, then run /budget recheck again.`;
    case 'active':
      return `Herald was not stopped; the balance is ${balance} (floor ${formatUsd(outcome.floorUsd)}).`;
  }
}

function alertDestination(settings: GuildBudgetSettings, operatorChannelId: string | undefined): string {
  if (operatorChannelId !== undefined) return `<#${operatorChannelId}> (set by the operator)`;
  return settings.alertChannelId === null
    ? 'the log only (see /budget alerts)'
    : `<#${settings.alertChannelId}>`;
}

function plural(count: number, noun: string): string {
  return `${formatCount(count)} ${noun}${count === 1 ? '' : 's'}`;
}

function timestamp(ms: number): string {
  return `<t:${Math.floor(ms / 1000)}:R>`;
}
