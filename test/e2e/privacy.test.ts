import { DatabaseSync } from 'node:sqlite';
import { PermissionFlagsBits } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Guild, Member } from '../../emulators/discord/index.ts';
import { createWorld, type World } from './harness.ts';

// What Herald keeps, deleted as Discord's developer policy asks: a server's data some time after Herald was removed
// from it (kept when invited back in time), and a member's own data when they ask, in every server at once.

const DAY = 24 * 60 * 60 * 1000;
let now = Date.UTC(2026, 10, 1);
let w: World;

beforeAll(async () => {
  w = await createWorld({
    privacy: { now: () => now, sweepIntervalMs: 50 },
    env: { DATA_RETENTION_DAYS: '30' },
  });
});
afterAll(async () => {
  await w?.close();
});

/** Rows of `table` for `guildId` (and `userId`), read from Herald's database file. */
function rows(table: string, guildId: string, userId?: string): number {
  const db = new DatabaseSync(w.databasePath, { readOnly: true });
  try {
    const row = db
      .prepare(
        `SELECT COUNT(*) AS n FROM ${table} WHERE guild_id = ?${userId === undefined ? '' : ' AND user_id = ?'}`,
      )
      .get(...(userId === undefined ? [guildId] : [guildId, userId])) as { n: number };
    return Number(row.n);
  } finally {
    db.close();
  }
}

/** A server with an admin who sets a dictionary word and a member who sets their spoken name. */
async function server(name: string): Promise<{ guild: Guild; admin: Member; member: Member }> {
  const guild = w.discord.createGuild({ name });
  guild.addTextChannel('general');
  const admin = guild.addMember({ name: `${name} admin`, permissions: PermissionFlagsBits.ManageGuild });
  const member = guild.addMember({ name: `${name} member` });
  await w.discord.untilReady();
  await vi.waitFor(() => expect(w.herald().client.guilds.cache.has(guild.id)).toBe(true));
  await w.discord.slash(admin, 'dictionary', { word: 'gg', spoken: 'good game' }, { subcommand: 'add' });
  await w.discord.slash(member, 'nickname', { name: 'Nick' }, { subcommand: 'set' });
  expect(rows('member_dictionary', guild.id)).toBe(1);
  expect(rows('member_voice', guild.id)).toBe(1);
  return { guild, admin, member };
}

describe('a server that removed Herald', () => {
  it('has its data deleted after DATA_RETENTION_DAYS, and kept when Herald is invited back within them', async () => {
    const gone = await server('Gone');
    const back = await server('Back');
    gone.guild.removeBot();
    back.guild.removeBot();
    await vi.waitFor(() => expect(rows('guild_removals', back.guild.id)).toBe(1));
    await vi.waitFor(() => expect(rows('guild_removals', gone.guild.id)).toBe(1));
    now += 10 * DAY;
    back.guild.inviteBot();
    await vi.waitFor(() => expect(rows('guild_removals', back.guild.id)).toBe(0));

    now += 20 * DAY; // 30 days since the removal
    await vi.waitFor(() => expect(rows('member_dictionary', gone.guild.id)).toBe(0), { timeout: 5_000 });
    expect(rows('member_voice', gone.guild.id)).toBe(0);
    expect(rows('guild_removals', gone.guild.id)).toBe(0);
    now += 60 * DAY;
    await new Promise((resolve) => setTimeout(resolve, 200)); // a few sweeps
    expect(rows('member_dictionary', back.guild.id)).toBe(1);
    expect(rows('member_voice', back.guild.id)).toBe(1);
  });
});

describe('/forget-me', () => {
  it('deletes the member’s own data in every server after the confirmation, and asks nothing of the TTS service', async () => {
    const one = await server('One');
    const two = w.discord.createGuild({ name: 'Two' });
    const twoText = two.addTextChannel('general');
    const sameUser = two.addMember({ name: 'One member', id: one.member.id });
    const other = two.addMember({ name: 'Other' });
    await vi.waitFor(() => expect(w.herald().client.guilds.cache.has(two.id)).toBe(true));
    await w.discord.slash(sameUser, 'nickname', { name: 'Nick Two' }, { subcommand: 'set' });
    await w.discord.slash(other, 'nickname', { name: 'Otto' }, { subcommand: 'set' });
    expect(rows('member_voice', two.id, one.member.id)).toBe(1);
    const requestsBefore = w.tts.requests.length;

    const ask = await w.discord.slash(one.member, 'forget-me');
    expect(ask.content).toMatch(/in every server/);
    expect(rows('member_voice', one.guild.id, one.member.id)).toBe(1); // nothing yet: it asks first
    const done = await w.discord.press(one.member, ask.message, 'forget-me:confirm');
    expect(done.content).toMatch(/^Deleted: your voice, spoken name and temperature in every server/);
    expect(rows('member_voice', one.guild.id, one.member.id)).toBe(0);
    expect(rows('member_voice', two.id, one.member.id)).toBe(0);
    expect(rows('member_voice', two.id, other.id)).toBe(1);
    expect(rows('member_dictionary', one.guild.id)).toBe(1); // the server's, not the member's
    expect(w.tts.requests.length).toBe(requestsBefore);

    const keep = await w.discord.slash(other, 'forget-me', {}, { channel: twoText });
    const kept = await w.discord.press(other, keep.message, 'forget-me:cancel');
    expect(kept.content).toBe('Nothing was deleted.');
    expect(rows('member_voice', two.id, other.id)).toBe(1);
  });
});
