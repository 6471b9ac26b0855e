import { ActionRowBuilder, ButtonBuilder, ButtonStyle } from 'discord.js';

/** Discord's limit on a message's content, in characters. */
export const MESSAGE_CHARS = 2_000;

/** Code points, as Discord counts a message's characters. */
const charsOf = (text: string): number => [...text].length;

/**
 * Splits `lines` into pages that each fit one message: at most `maxLines` lines, and at most `maxChars` characters
 * joined by newlines beside a header of up to `reserve` characters (Discord refuses a longer message outright). A
 * line longer than a page is cut with an ellipsis. Always at least one page (empty when there are no lines).
 */
export function paginate(
  lines: readonly string[],
  options: { readonly maxLines: number; readonly maxChars?: number; readonly reserve?: number },
): string[][] {
  const room = (options.maxChars ?? MESSAGE_CHARS) - (options.reserve ?? 0);
  const pages: string[][] = [[]];
  let used = 0;
  for (const raw of lines) {
    const line = charsOf(raw) > room ? `${[...raw].slice(0, room - 1).join('')}…` : raw;
    let page = pages.at(-1) as string[];
    const cost = charsOf(line) + (page.length > 0 ? 1 : 0);
    if (page.length >= options.maxLines || (page.length > 0 && used + cost > room)) {
      page = [];
      pages.push(page);
      used = 0;
    }
    used += charsOf(line) + (page.length > 0 ? 1 : 0);
    page.push(line);
  }
  return pages;
}

/** "Previous" and "Next" buttons for page `page` of `pages` (custom ids `${prefix}:<page>`); none for one page. */
export function pageButtons(prefix: string, page: number, pages: number): ActionRowBuilder<ButtonBuilder>[] {
  if (pages <= 1) return [];
  return [
    new ActionRowBuilder<ButtonBuilder>().addComponents(
      new ButtonBuilder()
        .setCustomId(`${prefix}:${page - 1}`)
        .setLabel('Previous')
        .setStyle(ButtonStyle.Secondary)
        .setDisabled(page === 0),
      new ButtonBuilder()
        .setCustomId(`${prefix}:${page + 1}`)
        .setLabel('Next')
        .setStyle(ButtonStyle.Secondary)
        .setDisabled(page >= pages - 1),
    ),
  ];
}
