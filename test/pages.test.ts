import { describe, expect, it } from 'vitest';
import { MESSAGE_CHARS, pageLines } from '../src/pages.ts';

describe('pageLines', () => {
  it('keeps at most maxLines a page and always returns one page', () => {
    expect(pageLines([], 3)).toEqual([[]]);
    expect(pageLines(['a', 'b', 'c', 'd'], 3)).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('starts a new page before the text would leave no room for a header', () => {
    const pages = pageLines(Array(30).fill('x'.repeat(205)), 20);
    for (const page of pages) expect(page.join('\n').length).toBeLessThanOrEqual(MESSAGE_CHARS - 200);
    expect(pages.flat()).toHaveLength(30);
  });

  it('cuts a line too long for any page', () => {
    const [page = []] = pageLines(['y'.repeat(5000)], 20);
    expect(page[0]).toHaveLength(MESSAGE_CHARS - 200);
    expect(page[0]?.endsWith('…')).toBe(true);
  });
});
