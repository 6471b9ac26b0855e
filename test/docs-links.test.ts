import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// Every relative link in README.md and docs/ leads somewhere: a file that exists and, for `#anchor`, a heading in
// it. Links to the web are not followed (no network in tests).

const ROOT = resolve(import.meta.dirname, '..');

/** The Markdown files whose links are checked. */
function documents(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(ROOT, 'docs', name));
  return [join(ROOT, 'README.md'), ...docs];
}

/** `text` without fenced code blocks and inline code, where a `[x](y)` is not a link. */
function withoutCode(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The targets of the Markdown links and images in `text`. */
function linksIn(text: string): string[] {
  return [...withoutCode(text).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map(
    (match) => match[1] ?? '',
  );
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings (outside code blocks). */
function anchorsOf(text: string): Set<string> {
  const headings = [...text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+)$/gm)];
  return new Set(headings.map((match) => anchorOf(match[1] ?? '')));
}

/** Why `target`, linked from `file`, leads nowhere; undefined when it resolves. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const [path = '', anchor] = target.split('#');
  const destination = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
  if (!existsSync(destination)) return `${target}: no such file`;
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(destination).isDirectory() || !destination.endsWith('.md'))
    return `${target}: an anchor in a non-Markdown file`;
  return anchorsOf(readFileSync(destination, 'utf8')).has(anchor)
    ? undefined
    : `${target}: no heading #${anchor}`;
}

describe('the documentation’s links', () => {
  it('finds links and images, not code that looks like one, and makes GitHub’s anchors', () => {
    expect(linksIn('See [a](docs/a.md#b-c) and ![p](p.png "t"), not `[x](y)`.\n```\n[z](w)\n```\n')).toEqual([
      'docs/a.md#b-c',
      'p.png',
    ]);
    expect(anchorOf('Upgrading @discordjs/voice (or @discordjs/rest)')).toBe(
      'upgrading-discordjsvoice-or-discordjsrest',
    );
    expect(anchorOf('Metrics, health and the status page')).toBe('metrics-health-and-the-status-page');
  });

  it('reports a missing file and a missing heading', () => {
    const readme = join(ROOT, 'README.md');
    expect(brokenLink(readme, 'docs/no-such-page.md')).toBe('docs/no-such-page.md: no such file');
    expect(brokenLink(readme, 'docs/operating.md#no-such-heading')).toBe(
      'docs/operating.md#no-such-heading: no heading #no-such-heading',
    );
    expect(brokenLink(readme, 'docs/operating.md#configuration')).toBeUndefined();
    expect(brokenLink(readme, 'https://discord.com/developers/applications')).toBeUndefined();
  });

  it('resolve, in README.md and every file in docs/', () => {
    const broken = documents().flatMap((file) =>
      linksIn(readFileSync(file, 'utf8'))
        .map((target) => brokenLink(file, target))
        .filter((problem) => problem !== undefined)
        .map((problem) => `${relative(ROOT, file)}: ${problem}`),
    );
    expect(broken).toEqual([]);
    expect(documents().length).toBeGreaterThan(5);
  });

  it('cite every result file kept in bench/results, and keep at most 30', () => {
    // The files in git (a bench or soak run leaves its new file beside them until it is committed or removed).
    const kept = execFileSync('git', ['ls-files', 'bench/results'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .map((path) => path.slice('bench/results/'.length))
      .filter((name) => name !== '' && name !== '.gitkeep');
    const docs = documents()
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThanOrEqual(30);
    expect(kept.filter((name) => !docs.includes(name))).toEqual([]);
  });
});
