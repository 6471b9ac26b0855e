import { describe, expect, it } from 'vitest';
import { commandBodies } from '../../commands/index.ts';
import type { DailySpend } from '../../src/budget/index.ts';
import {
  DEFAULT_USER_INSTALL_CHARS_PER_DAY,
  parseUserInstallConfig,
  USER_INSTALL_LEDGER_ID,
  userInstallRefusal,
} from '../../src/voice-message/index.ts';

describe('parseUserInstallConfig', () => {
  it.each([
    [{}, { enabled: false, charsPerDay: DEFAULT_USER_INSTALL_CHARS_PER_DAY }],
    [{ USER_INSTALL: 'on' }, { enabled: true, charsPerDay: DEFAULT_USER_INSTALL_CHARS_PER_DAY }],
    [
      { USER_INSTALL: 'OFF', USER_INSTALL_CHARS_PER_DAY: '500' },
      { enabled: false, charsPerDay: 500 },
    ],
    [
      { USER_INSTALL: 'true', USER_INSTALL_CHARS_PER_DAY: ' 90 ' },
      { enabled: true, charsPerDay: 90 },
    ],
  ])('reads %j', (env, value) => {
    expect(parseUserInstallConfig(env)).toEqual({ ok: true, value });
  });

  it.each([
    [{ USER_INSTALL: 'maybe' }, 'USER_INSTALL must be on or off.'],
    [{ USER_INSTALL_CHARS_PER_DAY: '0' }, 'USER_INSTALL_CHARS_PER_DAY must be a whole number'],
    [{ USER_INSTALL_CHARS_PER_DAY: '1.5' }, 'USER_INSTALL_CHARS_PER_DAY must be a whole number'],
    [{ USER_INSTALL_CHARS_PER_DAY: 'lots' }, 'USER_INSTALL_CHARS_PER_DAY must be a whole number'],
  ])('refuses %j, naming the variable', (env, problem) => {
    const parsed = parseUserInstallConfig(env);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? [] : parsed.problems.join(' ')).toContain(problem);
  });
});

describe('userInstallRefusal', () => {
  const spend = (characters: number): DailySpend => ({
    guildId: USER_INSTALL_LEDGER_ID,
    day: '2026-11-29',
    usd: 0,
    characters,
    generations: 1,
    members: [{ userId: 'u1', usd: 0, characters, generations: 1 }],
  });
  const budget = (characters: number) => ({
    spendToday: async (guildId: string) => {
      expect(guildId).toBe(USER_INSTALL_LEDGER_ID);
      return spend(characters);
    },
  });
  const config = { enabled: true, charsPerDay: 100 };

  it('lets a message that fits the day through, up to the limit exactly', async () => {
    expect(await userInstallRefusal(budget(60), config, 'u1', 40)).toBeUndefined();
    expect(await userInstallRefusal(budget(60), config, 'someone else', 100)).toBeUndefined();
  });

  it('refuses one past it, saying what is left', async () => {
    expect(await userInstallRefusal(budget(60), config, 'u1', 41)).toBe(
      'You have used 60 of your 100 characters of voice messages today (UTC); this one needs 41. Try a shorter one, or again tomorrow.',
    );
    expect(await userInstallRefusal(budget(0), config, 'u2', 101)).toMatch(/^That message is 101 characters/);
  });
});

describe('command registration', () => {
  const byName = (userInstall: boolean) =>
    new Map(commandBodies({ userInstall }).map((body) => [body.name, body]));

  it('is for servers only without USER_INSTALL', () => {
    for (const body of byName(false).values()) {
      expect(body.integration_types).toEqual([0]);
      expect(body.contexts).toEqual([0]);
    }
  });

  it('offers /speak alone to user installs, in servers and DMs, with USER_INSTALL', () => {
    const bodies = byName(true);
    expect(bodies.get('speak')).toMatchObject({ integration_types: [0, 1], contexts: [0, 1, 2] });
    expect(bodies.get('Read aloud')).toMatchObject({ type: 3, integration_types: [0], contexts: [0] });
    const offered = [...bodies.values()].filter((body) => body.integration_types?.includes(1));
    expect(offered.map((body) => body.name)).toEqual(['speak']);
  });
});
