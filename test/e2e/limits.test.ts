import { afterEach, describe, expect, it } from 'vitest';
import type { Reply } from '../../emulators/discord/types.ts';
import { manySpeakers } from '../../emulators/tts/index.ts';
import { createWorld, type World } from './harness.ts';

// Long lists page within Discord's limits. The emulator refuses any message over them (400, 50035), so a page
// that did not fit would fail the command here, not just an assertion.

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/** Presses Next until it is disabled; every page's content, first to last. */
async function allPages(w: World, first: Reply, name: string): Promise<string[]> {
  const pages = [first.content];
  let reply = first;
  for (let page = 1; ; page++) {
    const next = JSON.stringify(reply.components).includes(`"${name}:${page}"`);
    const disabled = JSON.stringify(reply.components).match(
      new RegExp(`"custom_id":"${name}:${page}"[^}]*"disabled":true`),
    );
    if (!next || disabled) return pages;
    reply = await w.discord.press(w.admin, reply.message, `${name}:${page}`);
    pages.push(reply.content);
  }
}

describe('long lists page within Discord’s limits', () => {
  it('a dictionary of 300 long words lists every word, each page within 2,000 characters', async () => {
    const w = await createWorld();
    world = w;
    const words = Array.from({ length: 300 }, (_, i) => `w${i}x`.padEnd(100, 'x'));
    for (const word of words) {
      const added = await w.discord.slash(
        w.admin,
        'dictionary',
        { word, spoken: 'y'.repeat(100) },
        { subcommand: 'add' },
      );
      expect(added.content).toMatch(/I will say/);
    }
    const first = await w.discord.slash(w.member, 'dictionary', {}, { subcommand: 'list' });
    const pages = await allPages(w, first, 'dictionary');
    expect(pages.length).toBeGreaterThan(15);
    for (const page of pages) expect([...page].length).toBeLessThanOrEqual(2000);
    const listed = pages.join('\n');
    for (const word of words) expect(listed).toContain(word);
  }, 120_000);

  it('a block list of 60 members lists every one, on pages with buttons', async () => {
    const w = await createWorld();
    world = w;
    const members = Array.from({ length: 60 }, (_, i) => w.guild.addMember({ name: `m${i}` }));
    for (const member of members) {
      await w.discord.slash(w.admin, 'block', { user: member }, { subcommand: 'user' });
    }
    const first = await w.discord.slash(w.admin, 'block', {}, { subcommand: 'list' });
    expect(first.ephemeral).toBe(true);
    const pages = await allPages(w, first, 'block');
    expect(pages.length).toBe(2);
    for (const page of pages) expect([...page].length).toBeLessThanOrEqual(2000);
    const listed = pages.join('\n');
    for (const member of members) expect(listed).toContain(`<@${member.id}>`);
    expect(pages[0]).toMatch(/page 1 of 2 · 60 in all/);
  }, 120_000);

  it('/voices with 120 speakers pages through all of them, and autocomplete offers 25 short choices', async () => {
    const speakers = manySpeakers(120).map((s) => ({
      ...s,
      name: `${s.name} ${'with a long name '.repeat(8)}`,
    }));
    const w = await createWorld({ tts: { speakers } });
    world = w;
    const first = await w.discord.slash(w.member, 'voices', {});
    const pages = [first];
    let reply = first;
    for (let page = 1; page < 12; page++) {
      reply = await w.discord.press(w.member, reply.message, `voices:${page}:`);
      pages.push(reply);
    }
    expect(pages.at(-1)?.embeds[0]?.footer?.text).toMatch(/Page 12 of 12 · 120 voices/);
    const listed = JSON.stringify(pages.map((p) => p.embeds));
    for (const speaker of speakers) expect(listed).toContain(speaker.name.slice(0, 12));
    const choices = await w.discord.autocomplete(
      w.member,
      'speak',
      { text: 'x', speaker: 'Speaker' },
      'speaker',
    );
    expect(choices).toHaveLength(25);
    for (const choice of choices) expect([...choice.name].length).toBeLessThanOrEqual(100);
  }, 120_000);
});
