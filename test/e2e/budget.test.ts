import { afterEach, describe, expect, it } from 'vitest';
import type { Channel, Guild, Member } from '../../emulators/discord/index.ts';
import { createWorld, type World, type WorldOptions } from './harness.ts';

// The budget guard end to end: the emulator's balance and charges are the ground truth.

const TEN = 'abcdefghij'; // 10 characters: $0.01 at $0.001 a character
const PRICE = { pricePerCharUsd: 0.001, msPerChar: 5 };
let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});
async function open(options: WorldOptions): Promise<World> {
  world = await createWorld(options);
  return world;
}
const REFUSED = /^(Herald has stopped speaking|Herald can’t say this)/;

describe('the floor', () => {
  it('stops repeated /speak exactly where the next request would cross it, and says why', async () => {
    const w = await open({ tts: { balanceUsd: 0.535, ...PRICE }, env: { BUDGET_FLOOR_USD: '0.50' } });
    const answers: string[] = [];
    for (let i = 0; i < 6; i++) {
      const reply = await w.discord.slash(w.member, 'speak', { text: TEN });
      answers.push(reply.content);
      if (REFUSED.test(reply.content)) break;
      await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });
    }
    // 0.535 → 0.525 → 0.515 → 0.505; a fourth would leave 0.495.
    expect(answers.filter((answer) => !REFUSED.test(answer))).toHaveLength(3);
    expect(answers.at(-1)).toMatch(
      /below the floor the operator set \(\$0\.50\)|reached the floor the operator set \(\$0\.50\)/,
    );
    expect(w.tts.balanceUsd).toBeGreaterThanOrEqual(0.5);
    expect(w.tts.balanceUsd).toBeCloseTo(0.505, 6);
    console.log(`floor $0.50: final balance $${w.tts.balanceUsd.toFixed(3)}; refusal: ${answers.at(-1)}`);
  });

  it('holds under fifty concurrent /speak from ten servers', async () => {
    const w = await open({ tts: { balanceUsd: 0.6, ...PRICE }, env: { BUDGET_FLOOR_USD: '0.50' } });
    const servers: { guild: Guild; member: Member; text: Channel }[] = [];
    for (let i = 0; i < 10; i++) {
      const guild = w.discord.createGuild({ name: `Server ${i}` });
      const text = guild.addTextChannel('chat');
      const room = guild.addVoiceChannel('Room');
      const member = guild.addMember({ name: `Member ${i}` });
      guild.joinVoice(member, room);
      servers.push({ guild, member, text });
    }
    await waitUntil(() => servers.every(({ guild }) => w.herald().client.guilds.cache.has(guild.id)));
    const replies = await Promise.all(
      servers.flatMap(({ member, text }) =>
        Array.from({ length: 5 }, () => w.discord.slash(member, 'speak', { text: TEN }, { channel: text })),
      ),
    );
    // Some are refused up front; the rest are queued, and each is either charged or refused (a follow-up) when
    // its turn to be synthesised comes.
    const charged = () => w.tts.requests.filter((r) => r.chargedUsd > 0).length;
    const refusedLater = () => replies.filter((r) => r.followUps().length > 0).length;
    const refusedAtOnce = replies.filter((r) => REFUSED.test(r.content)).length;
    await waitUntil(() => charged() + refusedLater() + refusedAtOnce === 50, 30_000);
    console.log(
      `50 concurrent: ${charged()} charged, ${refusedAtOnce} refused at once, ${refusedLater()} refused when due, final balance $${w.tts.balanceUsd.toFixed(3)}`,
    );
    expect(w.tts.balanceUsd).toBeGreaterThanOrEqual(0.5);
    expect(charged()).toBe(10);
    expect(
      replies.flatMap((r) => r.followUps()).every((f) => /below the floor|reached the floor/.test(f.content)),
    ).toBe(true);
  });
});

describe('blocking and coming back', () => {
  it('blocks at once on a 402, stays blocked across a restart, and resumes on the operator’s recheck', async () => {
    // Automatic re-checks off: this is the operator's own path (correctness.test.ts covers the automatic one).
    const w = await open({
      tts: { balanceUsd: 10, ...PRICE },
      env: { BUDGET_FLOOR_USD: '0.50', BUDGET_RECHECK_MINUTES: '0' },
    });
    await w.restart({ BOT_OWNER_IDS: w.admin.id });
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(/Speaking now/);
    await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });

    // The account is drained elsewhere: the next generation is refused by the service.
    w.tts.balanceUsd = 0.001;
    const drained = await w.discord.slash(w.member, 'speak', { text: TEN });
    const told = await drained.untilFollowUp();
    expect(told.content).toMatch(/out of credit/);
    const requestsBefore = w.tts.requests.length;
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(
      /Herald has stopped speaking/,
    );
    expect(w.tts.requests.length).toBe(requestsBefore); // refused before any call to the service

    await w.restart();
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(
      /Herald has stopped speaking/,
    );

    w.tts.balanceUsd = 5; // the operator tops up
    expect((await w.discord.slash(w.member, 'budget', {}, { subcommand: 'recheck' })).content).toMatch(
      /Only the bot’s operator/,
    );
    const recheck = await w.discord.slash(w.admin, 'budget', {}, { subcommand: 'recheck' });
    expect(recheck.content).toMatch(/Herald speaks again/);
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(/Speaking now/);
  });
});

describe('a service that never reports the balance', () => {
  // Issue 10: with no X-Balance-USD the guard once skipped the floor check, and with no price known counted spend
  // as 0 so daily caps never applied. The emulator's charges and balance are the ground truth here.
  const NO_BALANCE = { kind: 'headers', headers: { 'X-Balance-USD': null } } as const;

  it('still never crosses the floor: the last known balance, less what each generation cost', async () => {
    const w = await open({ tts: { balanceUsd: 0.545, ...PRICE }, env: { BUDGET_FLOOR_USD: '0.50' } });
    // The first generation reports the balance; none after it does.
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(/Speaking now/);
    await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });
    w.tts.inject(NO_BALANCE, { times: 50 });
    const answers: string[] = [];
    for (let i = 0; i < 8; i++) {
      const reply = await w.discord.slash(w.member, 'speak', { text: TEN });
      answers.push(reply.content);
      if (REFUSED.test(reply.content)) break;
      await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });
    }
    const unreported = w.tts.requests.filter((r) => r.chargedUsd > 0 && r.faults.includes('headers'));
    // 0.545 → 0.535 (reported) → 0.525 → 0.515 → 0.505 (deducted by Herald); a fifth would leave 0.495.
    expect(unreported).toHaveLength(3);
    expect(answers.at(-1)).toMatch(/below the floor the operator set|reached the floor the operator set/);
    expect(w.tts.balanceUsd).toBeCloseTo(0.505, 6);
  });

  it('still applies a daily cap when no response says the balance or the cost, at the configured price', async () => {
    const w = await open({ tts: { balanceUsd: 10, ...PRICE }, env: { BUDGET_PRICE_PER_CHAR_USD: '0.001' } });
    w.tts.inject({ kind: 'headers', headers: { 'X-Balance-USD': null, 'X-Cost-USD': null } }, { times: 50 });
    await w.discord.slash(w.admin, 'budget', { usd: 0.02 }, { subcommand: 'cap' });
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) {
      const reply = await w.discord.slash(w.member, 'speak', { text: TEN });
      answers.push(reply.content);
      if (!/Speaking now|Queued/.test(reply.content)) break;
      await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });
    }
    expect(w.tts.requests.filter((r) => r.chargedUsd > 0)).toHaveLength(2);
    expect(answers.at(-1)).toMatch(/This server has used its daily speech budget: \$0\.02 of \$0\.02/);
  });
});

describe('fairness', () => {
  it('refuses past a server’s daily cap with its own message', async () => {
    const w = await open({ tts: { balanceUsd: 10, ...PRICE } });
    const refusedCap = await w.discord.slash(w.member, 'budget', { usd: 0.02 }, { subcommand: 'cap' });
    expect(refusedCap.content).toMatch(/Manage Server/);
    expect((await w.discord.slash(w.admin, 'budget', { usd: 0.02 }, { subcommand: 'cap' })).content).toMatch(
      /at most \$0\.02/,
    );
    for (let i = 0; i < 2; i++) {
      expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(
        /Speaking now|Queued/,
      );
      await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });
    }
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(
      /This server has used its daily speech budget: \$0\.02 of \$0\.02/,
    );
  });

  it('refuses a member speaking faster than the per-minute limit with its own message', async () => {
    const w = await open({
      tts: { balanceUsd: 10, ...PRICE },
      env: { BUDGET_MEMBER_CHARS_PER_MINUTE: '25' },
    });
    for (let i = 0; i < 2; i++) {
      expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(
        /Speaking now|Queued/,
      );
      await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });
    }
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(
      /speaking faster than the 25 characters a minute/,
    );
    // Another member is not affected.
    expect((await w.discord.slash(w.admin, 'speak', { text: TEN })).content).toMatch(/Speaking now|Queued/);
  });

  it('counts what a member has queued and not yet paid for against the per-minute limit', async () => {
    // 40 ms of audio a character: the first sentence plays for 4 s, and the one queued behind it is not paid for
    // (nor reserved) until the first nears its end.
    const w = await open({
      tts: { balanceUsd: 10, pricePerCharUsd: 0.001, msPerChar: 40 },
      env: { BUDGET_MEMBER_CHARS_PER_MINUTE: '115' },
    });
    expect((await w.discord.slash(w.member, 'speak', { text: TEN.repeat(10) })).content).toMatch(
      /Speaking now/,
    );
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(/Queued at position 2/);
    // 100 paid, 10 queued, 10 more: past 115. Without the queued ten it would be 110.
    expect((await w.discord.slash(w.member, 'speak', { text: TEN })).content).toMatch(
      /speaking faster than the 115 characters a minute/,
    );
    expect((await w.discord.slash(w.admin, 'speak', { text: TEN })).content).toMatch(/Queued/);
  });
});

describe('/budget', () => {
  it('shows figures that match what the service charged', async () => {
    const w = await open({ tts: { balanceUsd: 3, ...PRICE }, env: { BUDGET_FLOOR_USD: '1' } });
    for (const [who, text] of [
      [w.member, TEN],
      [w.admin, `${TEN}${TEN}`],
      [w.member, TEN],
    ] as const) {
      await w.discord.slash(who, 'speak', { text });
      await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });
    }
    const show = await w.discord.slash(w.admin, 'budget', {}, { subcommand: 'show' });
    expect(show.ephemeral).toBe(true);
    expect(show.allowedMentions).toEqual({ parse: [] });
    const charged = w.tts.totalChargedUsd();
    expect(charged).toBeCloseTo(0.04, 9);
    expect(show.content).toContain(`Balance: $${w.tts.balanceUsd.toFixed(2)}`);
    expect(show.content).toContain('Floor: $1.00');
    expect(show.content).toContain('$0.001 per character');
    expect(show.content).toMatch(/\*\*This server today\*\* \(.+\): \$0\.04 · 40 characters · 3 generations/);
    expect(show.content).toContain(`<@${w.member.id}>: $0.02 · 20 characters · 2 generations`);
    expect(show.content).toContain(`<@${w.admin.id}>: $0.02 · 20 characters · 1 generation`);
    expect((await w.discord.slash(w.member, 'budget', {}, { subcommand: 'show' })).content).toMatch(
      /Manage Server/,
    );
  });
});

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
