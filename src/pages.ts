/** Characters of a Discord message's `content`. */
export const MESSAGE_CHARS = 2000;

/** Room kept on a page for its header line ("page 2 of 7 · …"). */
const HEADER_CHARS = 200;

/**
 * Splits list lines into pages that each fit one message: at most `maxLines` lines, and their text (joined by
 * newlines) within {@link MESSAGE_CHARS} less room for a header. A single line too long for a page is cut with
 * "…". Always at least one page (perhaps empty). Lengths count UTF-16 units, never fewer than Discord counts.
 */
export function pageLines(lines: readonly string[], maxLines: number): string[][] {
  const budget = MESSAGE_CHARS - HEADER_CHARS;
  const pages: string[][] = [[]];
  let used = 0;
  for (const whole of lines) {
    const line = whole.length > budget ? `${whole.slice(0, budget - 1)}…` : whole;
    let page = pages[pages.length - 1] ?? [];
    if (page.length > 0 && (page.length >= maxLines || used + 1 + line.length > budget)) {
      page = [];
      pages.push(page);
      used = 0;
    }
    used += (page.length > 0 ? 1 : 0) + line.length;
    page.push(line);
  }
  return pages;
}
