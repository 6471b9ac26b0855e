import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reply } from '../../emulators/discord/index.ts';
import { manySpeakers } from '../../emulators/tts/index.ts';
import { createWorld, type World } from './harness.ts';

// Long lists against Discord's limits, which the emulator enforces as Discord does (400, code 50035): a reply that
// did not fit would be refused, and the member would see an error instead of the page asserted here.

const LONG_NAME = `The Voice With A Name Far Longer Than Discord Lets A Choice Have ${'x'.repeat(85)}`;
let w: World;
beforeAll(async () => {
  w = await createWorld({
    tts: {
      speakers: [
        ...manySpeakers(119),
        { ...manySpeakers(120)[119], name: LONG_NAME } as ReturnType<typeof manySpeakers>[number],
      ],
    },
  });
});
afterAll(async () => {
  await w?.close();
});

const chars = (text: string) => [...text].length;

/** Presses "Next" until the last page; returns every page's reply, the first included. */
async function allPages(first: Reply, next: (page: Reply) => string | undefined): Promise<Reply[]> {
  const pages = [first];
  for (let id = next(first); id !== undefined; id = next(pages.at(-1) as Reply)) {
    pages.push(await w.discord.press(w.admin, (pages.at(-1) as Reply).message, id));
  }
  return pages;
}

/** The custom id of an enabled "Next" button, if any. */
function nextButton(reply: Reply): string | undefined {
  const buttons = (
    reply.components as { components?: { label?: string; custom_id?: string; disabled?: boolean }[] }[]
  ).flatMap((row) => row.components ?? []);
  const next = buttons.find((b) => b.label === 'Next');
  return next && !next.disabled ? next.custom_id : undefined;
}

describe('Discord’s limits', () => {
  it('/voices with 120 speakers, one named with 150 characters: every page fits, every voice listed', async () => {
    const first = await w.discord.slash(w.member, 'voices');
    const pages = await allPages(first, nextButton);
    const descriptions = pages.map((p) =>
      String((p.embeds[0] as { description?: string })?.description ?? ''),
    );
    expect(pages.map((p) => (p.embeds[0] as { footer?: { text?: string } })?.footer?.text)).toEqual(
      pages.map((_, i) =>
        expect.stringMatching(new RegExp(`^Page ${i + 1} of ${pages.length} · 120 voices`)),
      ),
    );
    const listed = descriptions.join('\n').split('\n');
    expect(listed).toHaveLength(120);
    for (const d of descriptions) expect(chars(d)).toBeLessThanOrEqual(4_096);
    for (const p of pages) expect(chars(p.content)).toBeLessThanOrEqual(2_000);
  });

  it('autocomplete offers at most 25 choices, none named over 100 characters', async () => {
    const all = await w.discord.autocomplete(w.member, 'speak', { text: 'hi', speaker: '' }, 'speaker');
    expect(all.length).toBeLessThanOrEqual(25);
    expect(all.length).toBeGreaterThan(0);
    const long = await w.discord.autocomplete(
      w.member,
      'speak',
      { text: 'hi', speaker: 'Far Longer' },
      'speaker',
    );
    expect(long).toHaveLength(1);
    expect(chars(long[0]?.name ?? '')).toBeLessThanOrEqual(100);
  });

  it('a dictionary of 300 long words and a block list of 60 members: every page fits, nothing left out', async () => {
    for (let i = 0; i < 300; i += 1) {
      const added = await w.discord.slash(
        w.admin,
        'dictionary',
        { word: `w${i}`.padEnd(100, 'o'), spoken: `said ${i}`.padEnd(100, 'a') },
        { subcommand: 'add' },
      );
      expect(added.content).not.toMatch(/went wrong|could not/i);
    }
    const words = await allPages(
      await w.discord.slash(w.admin, 'dictionary', {}, { subcommand: 'list' }),
      nextButton,
    );
    for (const page of words) expect(chars(page.content)).toBeLessThanOrEqual(2_000);
    expect(words.flatMap((p) => p.content.split('\n').filter((l) => l.startsWith('• ')))).toHaveLength(300);

    for (let i = 0; i < 60; i += 1) {
      const member = w.guild.addMember({ name: `Troll ${i}` });
      await w.discord.slash(w.admin, 'block', { user: member }, { subcommand: 'user' });
    }
    const blocked = await allPages(
      await w.discord.slash(w.admin, 'block', {}, { subcommand: 'list' }),
      nextButton,
    );
    for (const page of blocked) expect(chars(page.content)).toBeLessThanOrEqual(2_000);
    expect(blocked[0]?.content).toMatch(/^\*\*Blocked\*\* · page 1 of 2 · 60 members/);
    expect(blocked.flatMap((p) => p.content.split('\n').filter((l) => l.startsWith('• <@')))).toHaveLength(
      60,
    );
  });
});
