import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  countCharacters,
  type MessageToSpeak,
  type NormaliseOptions,
  needsAuthorPrefix,
  normaliseMessage,
} from '../../src/text/normalise.ts';

const USERS: Readonly<Record<string, string>> = {
  '1': 'Alice',
  '2': 'Bob',
  '3': '🎉',
  '4': 'www.evil.com <@1>',
};
const ROLES: Readonly<Record<string, string>> = { '10': 'Moderators' };
const CHANNELS: Readonly<Record<string, string>> = { '20': 'general' };

function options(overrides: Partial<NormaliseOptions> = {}): NormaliseOptions {
  return {
    userName: (id) => USERS[id],
    roleName: (id) => ROLES[id],
    channelName: (id) => CHANNELS[id],
    linkDomains: false,
    emoji: 'name',
    maxChars: 300,
    repeatCap: 3,
    ...overrides,
  };
}

function message(content: string, extras: Partial<MessageToSpeak> = {}): MessageToSpeak {
  return { content, attachments: [], stickers: [], ...extras };
}

type Case = readonly [name: string, content: string, expected: string, overrides?: Partial<NormaliseOptions>];

const TEXT_CASES: readonly Case[] = [
  // Plain text and whitespace
  ['plain text unchanged', 'hello there', 'hello there'],
  ['runs of spaces collapsed', 'hello     there', 'hello there'],
  ['lines joined with a pause', 'first line\nsecond line', 'first line, second line'],
  ['line ending in punctuation joined with a space', 'done.\nnext', 'done. next'],
  ['blank lines and CRLF', 'a\r\n\r\n\r\nb', 'a, b'],
  ['leading and trailing space trimmed', '   hi   ', 'hi'],
  ['only whitespace says nothing', '  \n\t ', ''],
  ['only punctuation says nothing', '...!?', ''],
  ['tabs and no-break spaces are spaces', 'a\tb\u00a0c', 'a b c'],
  // Mentions
  ['user mention → display name', 'hi <@1>', 'hi Alice'],
  ['legacy nickname mention', 'hi <@!2>', 'hi Bob'],
  ['unknown user → someone', 'hi <@999>', 'hi someone'],
  ['role mention', 'ping <@&10>', 'ping Moderators'],
  ['unknown role', 'ping <@&11>', 'ping a role'],
  ['channel mention', 'see <#20>', 'see general'],
  ['unknown channel', 'see <#21>', 'see a channel'],
  ['name of only emoji → someone', 'hi <@3>', 'hi someone'],
  ['hostile name is scrubbed', 'hi <@4>', 'hi a link @1'],
  ['@everyone', '@everyone look', 'everyone look'],
  ['@here', '@here look', 'here look'],
  ['slash command mention', 'use </ping:123>', 'use /ping'],
  ['guild navigation', 'go to <id:customize>', 'go to channels and roles'],
  // Links
  ['bare link', 'see https://example.com/a?b=c', 'see a link'],
  ['link with domain', 'see https://www.example.com/a', 'see a link to example.com', { linkDomains: true }],
  ['trailing punctuation not in the link', 'see https://example.com/a, ok', 'see a link, ok'],
  ['link in parentheses', '(https://example.com/x)', '(a link)'],
  ['link stops before spoiler pipes', 'https://example.com/x||secret|| ok', 'a link spoiler ok'],
  ['suppressed embed', 'see <https://example.com/x>', 'see a link'],
  ['upper-case scheme', 'HTTPS://EXAMPLE.COM/X', 'a link'],
  ['masked link → its text', '[the docs](https://example.com/docs)', 'the docs'],
  [
    'masked link with domain',
    '[click here](https://evil.example/x)',
    'click here (a link to evil.example)',
    { linkDomains: true },
  ],
  ['masked link with suppressed embed', '[docs](<https://example.com>)', 'docs'],
  ['bare www address', 'go to www.example.com now', 'go to a link now'],
  ['www address with domain', 'go to www.example.com', 'go to a link to example.com', { linkDomains: true }],
  ['"awww." is not a link', 'awww. so cute', 'awww so cute'],
  ['link with no host', 'http:// is a scheme', 'http is a scheme'],
  // Emoji
  ['unicode emoji named', 'hi 😀', 'hi grinning face'],
  ['skin tone ignored', '👍🏽', 'thumbs up'],
  ['variation selector optional', '❤️ and ❤', 'red heart and red heart'],
  ['ZWJ family', '👨‍👩‍👧', 'family man, woman, girl'],
  ['ZWJ with skin tone', '👩🏽‍💻', 'woman technologist'],
  ['flag', '🇫🇷', 'flag France'],
  ['tag-sequence flag', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', 'flag Scotland'],
  ['keycap', '#️⃣', 'keycap #'],
  ['emoji dropped', 'hi 😀 there 🇫🇷', 'hi there', { emoji: 'drop' }],
  ['emoji-only message dropped says nothing', '😀😀', '', { emoji: 'drop' }],
  [
    'repeated emoji capped',
    '😂😂😂😂😂',
    'face with tears of joy face with tears of joy face with tears of joy',
  ],
  ['lone regional indicator dropped', 'a 🇦 b', 'a b'],
  ['custom emoji → name', 'nice <:party_blob:123>', 'nice party blob'],
  ['animated custom emoji, camel case', '<a:PartyParrot:456>', 'Party Parrot'],
  ['custom emoji named even when unicode emoji dropped', '<:wave:1>', 'wave', { emoji: 'drop' }],
  // Code and spoilers
  ['code block', '```js\nconst x = 1;\n```', 'code block'],
  ['code block in a sentence', 'look:\n```\nrm -rf /\n```\nthat', 'look: code block, that'],
  ['inline code kept', 'run `npm test` now', 'run npm test now'],
  ['long inline code → code', `run \`${'x '.repeat(50)}\``, 'run code'],
  ['markup inside inline code is literal', '`**x**`', '**x**'],
  ['spoiler', 'the end: ||he dies||', 'the end: spoiler'],
  ['spoiler over lines with markup', '||**secret**\n<@1> `more`||!', 'spoiler!'],
  ['spoiler inside bold', '**||secret||**', 'spoiler'],
  ['unclosed spoiler is visible in Discord', '||not hidden', 'not hidden'],
  ['pipes inside inline code do not open a spoiler', '`a||b` shown || hidden||', 'a||b shown spoiler'],
  // Markdown
  ['bold', '**bold**', 'bold'],
  ['bold italic', '***both***', 'both'],
  ['italic star', 'an *it* word', 'an it word'],
  ['italic underscore', 'an _it_ word', 'an it word'],
  ['snake_case kept', 'my_var_name', 'my_var_name'],
  ['underline', '__under__', 'under'],
  ['strike', '~~gone~~', 'gone'],
  ['lone star kept', '5 * 3', '5 * 3'],
  ['escaped markdown is literal', '\\*not italic\\*', '*not italic*'],
  ['escaped mention never survives as syntax', '\\<@1>', '@1>'],
  ['quote', '> quoted', 'quoted'],
  ['block quote', '>>> all\nof this', 'all, of this'],
  ['headings', '# Title\n## Sub\n### Small', 'Title, Sub, Small'],
  ['subtext', '-# small print', 'small print'],
  ['bullet list', '- eggs\n- milk\n* tea', 'eggs, milk, tea'],
  ['numbered list keeps numbers', '1. eggs\n2. milk', '1. eggs, 2. milk'],
  // Timestamps
  ['relative timestamp', 'ends <t:1700000000:R>', 'ends a time'],
  ['time-of-day timestamp', 'at <t:1700000000:t>', 'at a time'],
  ['date timestamp', 'on <t:1700000000:D>', 'on 14 November 2023'],
  ['default timestamp style is a date', 'on <t:1700000000>', 'on 14 November 2023'],
  ['date in the chosen zone', 'on <t:1700000000:d>', 'on 15 November 2023', { timeZone: 'Pacific/Auckland' }],
  ['out-of-range timestamp', 'on <t:99999999999999999:D>', 'on a time'],
  // Floods
  ['repeated letters capped', 'nooooooo', 'nooo'],
  ['repeated punctuation capped', 'what!!!!!!!', 'what!!!'],
  ['repeated syllables capped', 'hahahahahaha', 'hahaha'],
  ['digits never capped', '1000000 dollars', '1000000 dollars'],
  ['repeated words capped', 'lol lol LOL lol lol', 'lol lol lol'],
  ['cap of 2', 'nooooo lol lol lol', 'noo lol lol', { repeatCap: 2 }],
  ['zalgo trimmed', 'Z̴̡̛̖̗͎͚̫̬a͓l̷g̵o', 'Z̴̡a͓l̷g̵o'],
  ['control and bidi characters removed', 'a\u0000b\u202Ec\u200Bd', 'abcd'],
  ['precomposed accents kept', 'café crème', 'café crème'],
  // Truncation and prefix
  ['author prefix', 'hello', 'Alice said, hello', { authorPrefix: 'Alice' }],
  ['author name cleaned', 'hello', 'someone said, hello', { authorPrefix: '🎉' }],
  ['empty message with prefix says nothing', '   ', '', { authorPrefix: 'Alice' }],
  ['cut at a word boundary', 'one two three four five', 'one two and more', { maxChars: 18 }],
  ['fits exactly', 'one two three', 'one two three', { maxChars: 13 }],
  [
    'prefix counts towards the limit',
    'one two three four',
    'Al said, one and more',
    { maxChars: 22, authorPrefix: 'Al' },
  ],
  [
    'a name too long for the limit is dropped',
    'one two three four',
    'one two and more',
    { maxChars: 17, authorPrefix: 'Bartholomew Longname' },
  ],
  ['one long word is cut inside', 'abcdefghijklmnopqrstuvwxyz', 'abcdef and more', { maxChars: 15 }],
  ['trailing comma dropped before "and more"', 'one, two three', 'one and more', { maxChars: 13 }],
  ['zero limit says nothing', 'hello', '', { maxChars: 0 }],
];

describe('normaliseMessage: text', () => {
  it('has at least 60 cases', () => {
    expect(TEXT_CASES.length).toBeGreaterThanOrEqual(60);
  });

  for (const [name, content, expected, overrides] of TEXT_CASES) {
    it(name, () => {
      expect(normaliseMessage(message(content), options(overrides))).toBe(expected);
    });
  }
});

type ExtrasCase = readonly [name: string, message: MessageToSpeak, expected: string];

const image = { name: 'cat.png', contentType: 'image/png' };
const EXTRAS_CASES: readonly ExtrasCase[] = [
  ['one image', message('', { attachments: [image] }), 'an image'],
  ['two images', message('', { attachments: [image, image] }), '2 images'],
  ['text and an image', message('look', { attachments: [image] }), 'look, an image'],
  [
    'image found by extension',
    message('', { attachments: [{ name: 'CAT.JPG', contentType: null }] }),
    'an image',
  ],
  [
    'video, audio and other files',
    message('', {
      attachments: [
        { name: 'a.mp4', contentType: 'video/mp4' },
        { name: 'b.mp3', contentType: 'audio/mpeg' },
        { name: 'c.zip', contentType: 'application/zip' },
        { name: 'd', contentType: null },
      ],
    }),
    'a video, an audio file and 2 files',
  ],
  [
    'voice message',
    message('', { attachments: [{ name: 'voice-message.ogg', contentType: 'audio/ogg' }] }),
    'a voice message',
  ],
  ['named sticker', message('', { stickers: [{ name: 'Wave' }] }), 'a sticker: Wave'],
  ['sticker with an unspeakable name', message('', { stickers: [{ name: '✨' }] }), 'a sticker'],
  [
    'image and sticker',
    message('hi', { attachments: [image], stickers: [{ name: 'hi' }] }),
    'hi, an image and a sticker: hi',
  ],
];

describe('normaliseMessage: attachments and stickers', () => {
  it.each(EXTRAS_CASES)('%s', (_, input, expected) => {
    expect(normaliseMessage(input, options())).toBe(expected);
  });
});

describe('normaliseMessage: lookups', () => {
  it('treats a lookup that throws as an unknown id', () => {
    const throwing = options({
      userName: () => {
        throw new Error('cache miss');
      },
    });
    expect(normaliseMessage(message('hi <@1>'), throwing)).toBe('hi someone');
  });

  it('asks only for the ids mentioned', () => {
    const asked: string[] = [];
    normaliseMessage(
      message('<@1> <@!2> ||<@3>||'),
      options({
        userName: (id) => {
          asked.push(id);
          return 'x';
        },
      }),
    );
    expect(asked).toEqual(['1', '2']);
  });
});

describe('needsAuthorPrefix', () => {
  it.each([
    ['first message in the channel', undefined, 'a', 0, true],
    ['same author 59 s later', { authorId: 'a', at: 0 }, 'a', 59_000, false],
    ['same author 60 s later', { authorId: 'a', at: 0 }, 'a', 60_000, true],
    ['another author at once', { authorId: 'a', at: 0 }, 'b', 1, true],
  ] as const)('%s', (_, previous, author, at, expected) => {
    expect(needsAuthorPrefix(previous, author, at)).toBe(expected);
  });
});

// The spoiler marker cannot arise any other way: free text below never contains its letters in a row.
const MARKER = 'Qspoilermarkerq';
const FORBIDDEN = /<@|<#|<:|<a:|<t:|https?:\/\/|www\./i;

// Free text never holds "|", "`" or "\": those could legitimately (as Discord renders it) re-pair a spoiler's
// pipes or pull it into inline code, and the marker check would then test Discord's parse rather than ours.
const freeText = fc
  .oneof(
    fc.string({ unit: 'binary', maxLength: 12 }),
    fc.string({
      unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
      maxLength: 6,
    }),
    fc.constantFrom(' ', '\n', 'word', 'nooooooo', 'lol lol lol lol lol', '!!!!!!', 'Z̴̡̛̖̗͎͚̫̬a', '\u202E', '\u200B'),
  )
  .map((text) => text.replace(/[|`\\]/g, ''));
const id = fc.oneof(
  fc.constantFrom('1', '2', '3', '4', '10', '20'),
  fc.bigInt({ min: 0n, max: 10n ** 20n }).map(String),
);
const mention = fc.oneof(
  id.map((value) => `<@${value}>`),
  id.map((value) => `<@!${value}>`),
  id.map((value) => `<@&${value}>`),
  id.map((value) => `<#${value}>`),
  fc.tuple(fc.stringMatching(/^\w{1,32}$/), id).map(([name, value]) => `<:${name}:${value}>`),
  fc.tuple(fc.stringMatching(/^\w{1,32}$/), id).map(([name, value]) => `<a:${name}:${value}>`),
  fc
    .tuple(
      fc.bigInt({ min: -(10n ** 15n), max: 10n ** 18n }),
      fc.constantFrom('', ':R', ':t', ':D', ':f', ':x'),
    )
    .map(([seconds, style]) => `<t:${seconds}${style}>`),
  fc.constantFrom(
    '<@',
    '<#',
    '<:',
    '<a:',
    '<t:',
    '<@abc>',
    '<<@1>>',
    '<@&>',
    '@everyone',
    '@here',
    '</cmd:1>',
  ),
);
const emoji = fc.constantFrom(
  '😀',
  '👍🏽',
  '❤️',
  '❤',
  '👨‍👩‍👧',
  '🇫🇷',
  '🇦',
  '#️⃣',
  '🏴󠁧󠁢󠁳󠁣󠁴󠁿',
  '👩🏽‍💻',
  '🏻',
  '\u200D',
  '\uFE0F',
);
const host = fc.stringMatching(/^[a-z0-9-]{1,10}(\.[a-z]{2,5}){1,2}$/);
const url = fc.oneof(
  fc
    .tuple(
      fc.constantFrom('http://', 'https://', 'HTTPS://', 'hTtP://'),
      host,
      fc.stringMatching(/^[/?#=a-z0-9.,)]{0,12}$/),
    )
    .map(([scheme, name, path]) => `${scheme}${name}${path}`),
  host.map((name) => `www.${name}`),
  host.map((name) => `<https://${name}>`),
  fc.tuple(freeText, host).map(([label, name]) => `[${label}](https://${name})`),
  fc.constantFrom('http://', 'https:/', 'www.', 'wwww.', 'http:<//x', 'ftp://x.y'),
);
const leaf = fc.oneof(freeText, mention, emoji, url);
const wrapped = leaf.chain((inner) =>
  fc.constantFrom(
    `**${inner}**`,
    `*${inner}*`,
    `_${inner}_`,
    `__${inner}__`,
    `~~${inner}~~`,
    // Trailing space: "`a`" then "```" reads, in Discord too, as one inline code running on to a later "`".
    `\`x${inner}\` `,
    `\`\`\`js\n${inner}\n\`\`\``,
    `\n> ${inner}`,
    `\n>>> ${inner}`,
    `\n# ${inner}`,
    `\n-# ${inner}`,
    `\n- ${inner}`,
    `\\*${inner}\\<`,
  ),
);
const spoiler = fc
  .array(fc.oneof(leaf, wrapped), { maxLength: 4 })
  .map((parts) => `||${MARKER}${parts.join(' ')}||`);
const content = fc
  .array(fc.oneof(leaf, wrapped, spoiler), { maxLength: 12 })
  .chain((parts) => fc.constantFrom(parts.join(''), parts.join(' '), parts.join('\n')));
const hostileName = fc.oneof(fc.constant(undefined), freeText, mention, url, fc.constant('||x|| **b** <@1>'));
const settings = fc.record({
  linkDomains: fc.boolean(),
  emoji: fc.constantFrom('name' as const, 'drop' as const),
  maxChars: fc.integer({ min: 0, max: 400 }),
  repeatCap: fc.integer({ min: 1, max: 6 }),
  authorPrefix: fc.option(fc.oneof(freeText, url, mention), { nil: undefined }),
  name: hostileName,
  sticker: fc.option(fc.oneof(freeText, url), { nil: undefined }),
});

describe('normaliseMessage: a counterexample fast-check found', () => {
  it('a display name like "<t:" never starts mention syntax in what is spoken', () => {
    const result = normaliseMessage(
      { content: 'hi <@20><:x||y', attachments: [], stickers: [] },
      {
        linkDomains: false,
        emoji: 'name',
        maxChars: 46,
        repeatCap: 1,
        userName: () => '<t:',
        roleName: () => undefined,
        channelName: () => undefined,
      },
    );
    expect(result).not.toMatch(FORBIDDEN);
    expect(result).toContain('t:');
  });
});

describe('normaliseMessage: a counterexample fast-check found (seed -1232629449)', () => {
  it('a Greek varia (U+1FEF), which NFC turns into a backtick, never pulls a spoiler into inline code', () => {
    // Discord parses the raw text: "\u1FEF" opens no code there, so the spoiler stays hidden.
    const result = normaliseMessage(message('\u1FEF||Qspoilermarkerq secret||`x`'), options());
    expect(result.toLowerCase()).not.toContain('secret');
    expect(result).toContain('spoiler');
  });
});

describe('normaliseMessage: a counterexample fast-check found (seed -201896095)', () => {
  it('a URL that ends in "://" (inline code after a bare scheme) is a link, not a scheme with its "://" cut off', () => {
    const result = normaliseMessage(message('http://`xhttp://` '), options({ repeatCap: 1 }));
    expect(result).not.toMatch(FORBIDDEN);
    expect(result).toBe('a link');
  });
});

describe('normaliseMessage: generated messages', () => {
  it('never throws, fits the limit, and lets no mention syntax, URL or spoiler through', () => {
    fc.assert(
      fc.property(content, settings, (text, setting) => {
        const { name, sticker, authorPrefix, ...rest } = setting;
        const result = normaliseMessage(
          {
            content: text,
            attachments: [],
            stickers: sticker === undefined ? [] : [{ name: sticker }],
          },
          {
            ...rest,
            ...(authorPrefix === undefined ? {} : { authorPrefix }),
            userName: () => name,
            roleName: () => name,
            channelName: () => name,
          },
        );
        expect(countCharacters(result)).toBeLessThanOrEqual(setting.maxChars);
        expect(result).not.toMatch(FORBIDDEN);
        expect(result.toLowerCase()).not.toContain(MARKER.toLowerCase());
        expect(result).toBe(result.trim());
        expect(result).not.toMatch(/[\p{Cc}\p{Cs}]/u);
      }),
      { numRuns: 10_000 },
    );
  });
});
