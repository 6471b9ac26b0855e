import { describeLink } from './links.ts';

/** What {@link resolveMarkdown} needs to turn Discord syntax into words. */
export interface MarkdownContext {
  /** Speakable user name for an id, already cleaned; "someone" when unknown. */
  readonly userName: (id: string) => string;
  /** Speakable role name for an id, already cleaned; "a role" when unknown. */
  readonly roleName: (id: string) => string;
  /** Speakable channel name for an id, already cleaned; "a channel" when unknown. */
  readonly channelName: (id: string) => string;
  /** Links are spoken with their domain. */
  readonly linkDomains: boolean;
  /** IANA time zone in which timestamps are spoken as dates. */
  readonly timeZone: string;
}

// Inline code is kept as words when short (a command, a file name); anything longer is noise worth paying for.
const LONGEST_INLINE_CODE = 80;

// Resolved pieces are parked in the text as private-use markers so the markdown stripping below can never
// touch a name, and are put back at the end. sanitise() removed every private-use character beforehand.
const OPEN = '\uE000';
const CLOSE = '\uE001';
const MARKER = /\uE000(\d+)\uE001/gu;

/** One piece of Discord syntax: where it may start, its pattern, and what to emit in its place. */
interface Rule {
  readonly startsWith: string;
  readonly pattern: RegExp;
  readonly emit: (match: RegExpExecArray, scan: Scan) => string;
}

/** State of one tokenising pass: how to name things, the parked pieces and the rules. */
interface Scan {
  readonly context: MarkdownContext;
  readonly pieces: string[];
  readonly rules: readonly Rule[];
}

function park(scan: Scan, spoken: string): string {
  return `${OPEN}${scan.pieces.push(spoken) - 1}${CLOSE}`;
}

// Discord's syntax, after the simple-markdown rules its client uses, in the order they are tried at one
// position. Sticky patterns, created per call so no lastIndex is shared between calls. Unlike Discord's, a
// URL here never contains "|" or "`" (neither is valid in a URL unescaped): a link swallowing a spoiler's or
// code block's opening marks would shift the pairing of every later one and could read a spoiler aloud.
function createRules(): Rule[] {
  return [
    {
      startsWith: '```',
      pattern: /```(?:[^`\n]*\n)?[\s\S]*?```/y,
      emit: (_, scan) => park(scan, ' code block '),
    },
    {
      startsWith: '`',
      pattern: /(`+)([\s\S]*?[^`])\1(?!`)/y,
      emit: ([, , code = ''], scan) =>
        park(scan, Array.from(code.trim()).length > LONGEST_INLINE_CODE ? ' code ' : code.trim()),
    },
    // A spoiler closes at the first "||" after at least one character, whatever lies between; its contents
    // are never looked at, so no markup inside can make them leak.
    { startsWith: '||', pattern: /\|\|[\s\S]+?\|\|/y, emit: (_, scan) => park(scan, ' spoiler ') },
    {
      startsWith: '<@',
      pattern: /<@!?(\d{1,20})>/y,
      emit: ([, id = ''], scan) => park(scan, scan.context.userName(id)),
    },
    {
      startsWith: '<@&',
      pattern: /<@&(\d{1,20})>/y,
      emit: ([, id = ''], scan) => park(scan, scan.context.roleName(id)),
    },
    {
      startsWith: '<#',
      pattern: /<#(\d{1,20})>/y,
      emit: ([, id = ''], scan) => park(scan, scan.context.channelName(id)),
    },
    {
      startsWith: '<',
      pattern: /<a?:([\w~-]{1,32}):\d{1,20}>/y,
      emit: ([, name = ''], scan) => park(scan, ` ${speakEmojiName(name)} `),
    },
    {
      startsWith: '<t:',
      pattern: /<t:(-?\d{1,20})(?::([tTdDfFR]))?>/y,
      emit: ([, seconds = '', style], scan) =>
        park(scan, ` ${speakTimestamp(seconds, style, scan.context.timeZone)} `),
    },
    {
      startsWith: '</',
      pattern: /<\/([^<>:\n]{1,100}):\d{1,20}>/y,
      emit: ([, command], scan) => park(scan, ` /${command} `),
    },
    {
      startsWith: '<id:',
      pattern: /<id:([\w-]{1,32})>/y,
      emit: ([, target = ''], scan) => park(scan, ` ${GUILD_NAVIGATION[target] ?? 'a channel'} `),
    },
    {
      startsWith: '<',
      pattern: /<(https?:\/\/[^\s<>|`]+)>/iy,
      emit: ([, url = ''], scan) => park(scan, ` ${describeLink(url, scan.context.linkDomains)} `),
    },
    {
      startsWith: '[',
      pattern: /\[([^[\]\n]{1,256})\]\(<?(https?:\/\/[^\s()<>|`]+)>?\)/iy,
      // The label is what the author chose to show; the domain, when wanted, is where it really goes.
      // The label cannot hold "[", so this recursion is one level deep at most.
      emit: ([, label = '', url = ''], scan) =>
        tokenise(label, scan) +
        (scan.context.linkDomains ? park(scan, ` (${describeLink(url, true)}) `) : ''),
    },
    {
      startsWith: 'h',
      pattern: /https?:\/\/[^\s<>|`]+[^<>|`.,:;"')\]\s]/iy,
      emit: ([url], scan) => park(scan, ` ${describeLink(url, scan.context.linkDomains)} `),
    },
    { startsWith: '@', pattern: /@(everyone|here)/y, emit: ([, who = ''], scan) => park(scan, who) },
  ];
}

const GUILD_NAVIGATION: Readonly<Record<string, string>> = {
  customize: 'channels and roles',
  browse: 'browse channels',
  guide: 'server guide',
  'linked-roles': 'linked roles',
};

/** "party_blob" → "party blob", "PartyBlob~1" → "Party Blob". */
function speakEmojiName(name: string): string {
  return name
    .replace(/~\d*$/, '')
    .replace(/[_~-]+/g, ' ')
    .replace(/(\p{Ll})(\p{Lu})/gu, '$1 $2')
    .trim();
}

function speakTimestamp(seconds: string, style: string | undefined, timeZone: string): string {
  // Time of day and "in 5 minutes" depend on the listener's zone and the moment of reading; a date does not.
  if (style === 't' || style === 'T' || style === 'R') return 'a time';
  const date = new Date(Number(seconds) * 1000);
  if (Number.isNaN(date.getTime())) return 'a time';
  try {
    return new Intl.DateTimeFormat('en-GB', {
      day: 'numeric',
      month: 'long',
      year: 'numeric',
      timeZone,
    }).format(date);
  } catch {
    return 'a time';
  }
}

/** Discord escapes any punctuation or symbol with a backslash; letters, digits and spaces are not escapes. */
function isEscapable(char: string): boolean {
  return /^[^\p{L}\p{N}\s]$/u.test(char);
}

function tokenise(text: string, scan: Scan): string {
  let out = '';
  let index = 0;
  scanning: while (index < text.length) {
    if (text[index] === '\\') {
      const escaped = String.fromCodePoint(text.codePointAt(index + 1) ?? 0x20);
      if (isEscapable(escaped)) {
        out += park(scan, escaped);
        index += 1 + escaped.length;
        continue;
      }
    }
    for (const rule of scan.rules) {
      if (!text.startsWith(rule.startsWith, index) && !(rule.startsWith === 'h' && text[index] === 'H'))
        continue;
      rule.pattern.lastIndex = index;
      const match = rule.pattern.exec(text);
      if (match === null) continue;
      out += rule.emit(match, scan);
      index += match[0].length;
      continue scanning;
    }
    out += text[index];
    index += 1;
  }
  return out;
}

// Line-start markers: quotes, headings, subtext and bullets. Ordered-list numbers stay: they are read.
const BLOCK_MARKER = /^ *(?:>>>(?: |$)|>(?: |$)|-# +|#{1,3} +|[-*+] +)/;

function stripBlockMarkers(line: string): string {
  let previous = '';
  while (line !== previous) {
    previous = line;
    line = line.replace(BLOCK_MARKER, '');
  }
  return line;
}

function stripInlineMarkers(text: string): string {
  return text
    .replace(/\*\*\*(?!\s)([\s\S]+?)\*\*\*/g, '$1')
    .replace(/\*\*([\s\S]+?)\*\*/g, '$1')
    .replace(/__([\s\S]+?)__/g, '$1')
    .replace(/~~([\s\S]+?)~~/g, '$1')
    .replace(/\*(?![\s*])([\s\S]+?)(?<![\s*])\*/g, '$1')
    .replace(/(?<!\w)_((?:__|[^_])+?)_(?!\w)/g, '$1')
    .replace(/\*\*|~~|\|\||`/g, '');
}

/**
 * Resolves Discord markup in sanitised text: mentions, emoji, timestamps and links become words, code
 * blocks "code block", spoilers "spoiler" (contents never read), and formatting markers are removed.
 */
export function resolveMarkdown(text: string, context: MarkdownContext): string {
  const pieces: string[] = [];
  const unblocked = text.split('\n').map(stripBlockMarkers).join('\n');
  const marked = tokenise(unblocked, { context, pieces, rules: createRules() });
  return stripInlineMarkers(marked).replace(MARKER, (_, index: string) => pieces[Number(index)] ?? '');
}
