import { describe, expect, it } from 'vitest';
import { MESSAGE_CHARS, pageButtons, paginate } from '../../src/discord/pages.ts';

const chars = (lines: readonly string[]) => [...lines.join('\n')].length;

describe('paginate', () => {
  it('pages by count when lines are short', () => {
    const pages = paginate(
      Array.from({ length: 45 }, (_, i) => `line ${i}`),
      { maxLines: 20 },
    );
    expect(pages.map((page) => page.length)).toEqual([20, 20, 5]);
    expect(pages.flat()).toEqual(Array.from({ length: 45 }, (_, i) => `line ${i}`));
  });

  it('pages by length when lines are long: every page fits a message beside its header', () => {
    const long = Array.from({ length: 300 }, (_, i) => `• ${'w'.repeat(100)} → ${'s'.repeat(95)}${i}`);
    const pages = paginate(long, { maxLines: 20, reserve: 100 });
    for (const page of pages) expect(chars(page)).toBeLessThanOrEqual(MESSAGE_CHARS - 100);
    expect(pages.flat()).toEqual(long);
    expect(pages.length).toBeGreaterThan(15);
  });

  it('cuts a line longer than a page, counts code points, and gives one empty page for no lines', () => {
    const [[cut]] = paginate(['é'.repeat(3_000)], { maxLines: 5, reserve: 10 }) as [[string]];
    expect([...cut].length).toBe(MESSAGE_CHARS - 10);
    expect(cut.endsWith('…')).toBe(true);
    expect(paginate([], { maxLines: 5 })).toEqual([[]]);
  });

  it('offers Previous and Next only when there is more than one page', () => {
    expect(pageButtons('block', 0, 1)).toEqual([]);
    const [row] = pageButtons('block', 0, 3).map((r) => r.toJSON());
    expect(row?.components.map((c) => ('custom_id' in c ? [c.custom_id, c.disabled] : []))).toEqual([
      ['block:-1', true],
      ['block:1', false],
    ]);
  });
});
