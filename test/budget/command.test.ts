import { PermissionFlagsBits } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { budget, describeRecheck, renderBudget } from '../../commands/budget.ts';
import type { BudgetDeps, BudgetProbe } from '../../src/budget/index.ts';
import type { Deps } from '../../src/discord/command.ts';
import { silentLogger } from '../../src/log.ts';
import { fakeService, makeGuard, NOON, req, speakOnce } from './helpers.ts';

const OWNER = '111111111111111111';
const ADMIN = '222222222222222222';
const CHANNEL = '333333333333333333';
const NO_SAVINGS = { hits: 0, characters: 0, usd: 0 };

/** The parts of a slash-command interaction /budget touches; replies are collected. */
function fakeInteraction(options: {
  subcommand: string;
  userId: string;
  manageGuild: boolean;
  usd?: number;
  channel?: { id: string } | null;
}) {
  const replies: { content: string; allowedMentions: unknown }[] = [];
  const interaction = {
    guildId: 'g1',
    user: { id: options.userId },
    deferred: false,
    replied: false,
    memberPermissions: {
      has: (flag: bigint) => flag === PermissionFlagsBits.ManageGuild && options.manageGuild,
    },
    options: {
      getSubcommand: () => options.subcommand,
      getNumber: () => options.usd ?? null,
      getChannel: () => options.channel ?? null,
    },
    async reply(reply: { content: string; allowedMentions: unknown }) {
      interaction.replied = true;
      replies.push(reply);
    },
    async deferReply() {
      interaction.deferred = true;
    },
    async editReply(reply: { content: string; allowedMentions: unknown }) {
      interaction.replied = true;
      replies.push(reply);
    },
  };
  return { interaction, replies };
}

async function setUp() {
  const made = await makeGuard({ pricePerCharUsd: 0.0001, warnUsd: 1 });
  const service = fakeService(0.6, 0.0001);
  const probe: BudgetProbe = async () => ({ ...service.charge(1), characters: 1 });
  const deps = {
    logger: silentLogger,
    budget: made.guard,
    budgetProbe: probe,
    isOperator: async (userId: string) => userId === OWNER,
    budgetAlertChannelId: undefined,
    cache: {
      savings: async () => ({ day: NO_SAVINGS, total: NO_SAVINGS }),
      guildEnabled: async () => true,
      setGuildEnabled: async () => {},
    },
    cacheEnabled: true,
    cacheMaxChars: 200,
  } as unknown as Deps & BudgetDeps;
  const run = async (options: Parameters<typeof fakeInteraction>[0]) => {
    const { interaction, replies } = fakeInteraction(options);
    await budget.execute(interaction as unknown as Parameters<typeof budget.execute>[0], deps);
    return replies.map((reply) => {
      expect(reply.allowedMentions).toEqual({ parse: [] });
      return reply.content;
    });
  };
  return { ...made, service, run };
}

describe('/budget', () => {
  it('recheck: the operator resumes after a top-up; anyone else is refused', async () => {
    const { guard, service, run } = await setUp();
    await speakOnce(guard, service, req(1000)); // 0.60 → 0.50: blocked
    expect((await guard.status()).status).toBe('blocked');

    expect(await run({ subcommand: 'recheck', userId: ADMIN, manageGuild: true })).toEqual([
      'Only the bot’s operator can run /budget recheck.',
    ]);
    expect(service.charges).toHaveLength(1);

    service.balanceUsd = 2;
    expect(await run({ subcommand: 'recheck', userId: OWNER, manageGuild: false })).toEqual([
      'Herald speaks again: the balance is $1.9999, above the floor ($0.50).',
    ]);
    expect((await guard.check(req(10))).kind).toBe('ok');
  });

  it('show, cap and alerts need Manage Server', async () => {
    const { run } = await setUp();
    for (const subcommand of ['show', 'cap', 'alerts']) {
      expect(await run({ subcommand, userId: OWNER, manageGuild: false, usd: 1 })).toEqual([
        '/budget needs the Manage Server permission.',
      ]);
    }
  });

  it('cap sets, and 0 clears, the server’s daily cap', async () => {
    const { guard, run } = await setUp();
    expect(await run({ subcommand: 'cap', userId: ADMIN, manageGuild: true, usd: 0.25 })).toEqual([
      'This server may now spend at most $0.25 on speech per day (UTC).',
    ]);
    expect((await guard.guildSettings('g1')).dailyCapUsd).toBe(0.25);
    expect(await run({ subcommand: 'cap', userId: ADMIN, manageGuild: true, usd: 0 })).toEqual([
      'This server no longer has a daily speech cap.',
    ]);
    expect((await guard.guildSettings('g1')).dailyCapUsd).toBeNull();
  });

  it('alerts sets and clears the server’s alert channel', async () => {
    const { guard, run } = await setUp();
    await run({ subcommand: 'alerts', userId: ADMIN, manageGuild: true, channel: { id: CHANNEL } });
    expect((await guard.guildSettings('g1')).alertChannelId).toBe(CHANNEL);
    await run({ subcommand: 'alerts', userId: ADMIN, manageGuild: true, channel: null });
    expect((await guard.guildSettings('g1')).alertChannelId).toBeNull();
  });

  it('show lists the figures, matching what the service charged', async () => {
    const { guard, service, run, clock } = await setUp();
    await speakOnce(guard, service, req(300, '444444444444444444'));
    await speakOnce(guard, service, req(120, '555555555555555555'));
    await speakOnce(guard, service, req(80, '444444444444444444'));
    clock.now = NOON + 90_000;
    const [content = ''] = await run({ subcommand: 'show', userId: ADMIN, manageGuild: true });
    const seen = Math.floor(NOON / 1000);
    expect(content.split('\n')).toEqual([
      '**Account** · speaking',
      `Balance: $0.55, seen <t:${seen}:R>`,
      'Floor: $0.50 · warning at $1.00',
      'Price: $0.0001 per character (learned)',
      'Per member: at most 1,000,000 characters a minute',
      '',
      '**This server today** (2026-01-15, UTC): $0.05 · 500 characters · 3 generations',
      'Daily cap: none',
      'Alerts: the log only (see /budget alerts)',
      '• <@444444444444444444>: $0.038 · 380 characters · 2 generations',
      '• <@555555555555555555>: $0.012 · 120 characters · 1 generation',
      '',
      '**Audio cache** · on for this server (/budget cache)',
      'Saved today: 0 hits · 0 characters · $0.00 not spent',
      'Saved in total: 0 hits · 0 characters · $0.00 not spent',
    ]);
    const charged = service.charges.reduce((sum, charge) => sum + charge.costUsd, 0);
    expect((await guard.spendToday('g1')).usd).toBeCloseTo(charged, 12);
  });
});

describe('renderBudget and describeRecheck', () => {
  it('shows a blocked state, an unknown balance and price, a cap and the operator’s alert channel', async () => {
    const text = renderBudget(
      {
        status: 'blocked',
        since: NOON,
        reason: 'service-refused',
        balanceUsd: undefined,
        balanceSeenAt: undefined,
        floorUsd: 0.5,
        warnUsd: undefined,
        pricePerCharUsd: 0.0003,
        priceSource: 'assumed',
        memberCharsPerMinute: 5000,
        inFlight: 2,
        reservedUsd: 0.02,
        uncertain: { generations: 3, upToUsd: 0.015 },
      },
      { guildId: 'g', day: '2026-01-15', usd: 0, characters: 0, generations: 0, members: [] },
      { guildId: 'g', dailyCapUsd: 3, alertChannelId: CHANNEL },
      '999999999999999999',
    );
    expect(text).toContain(
      `**Account** · stopped since <t:${NOON / 1000}:R>: the service refused for lack of credit`,
    );
    expect(text).toContain('Balance: unknown (no speech generated yet)');
    expect(text).toContain('Price: $0.0003 per character (assumed until the first generation)');
    expect(text).toContain('In flight: 2 ($0.02 set aside)');
    expect(text).toContain(
      "Uncertain: 3 generations cut off by a stop before the service's answer was recorded, counted at their most ($0.015)",
    );
    expect(text).toContain('Daily cap: $3.00');
    expect(text).toContain('Alerts: <#999999999999999999> (set by the operator)');
  });

  it.each([
    [{ kind: 'resumed', balanceUsd: 2, floorUsd: 0.5 } as const, 'Herald speaks again'],
    [
      { kind: 'still-blocked', balanceUsd: 0.4, floorUsd: 0.5 } as const,
      'Herald stays stopped: the balance is $0.40',
    ],
    [{ kind: 'active', balanceUsd: undefined, floorUsd: 0.5 } as const, 'the balance is unknown'],
  ])('describeRecheck(%o)', async (outcome, text) => {
    expect(describeRecheck(outcome)).toContain(text);
  });
});
