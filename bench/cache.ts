/**
 * Benchmark: what the audio cache saves on a realistic chat. Generates a seeded corpus of server chat (greetings,
 * reactions, repeated short phrases, long unique messages; proportions below), turns each message into the text
 * Herald would send exactly as auto-read does (the one normaliser, "<name> said" when the author changes), and
 * plays it through the real cache decorator and disk cache in front of a counting stand-in for the paid service.
 * Prints a table and writes bench/results/cache.json. Run: `npm run bench:cache` (MESSAGES=… to change the size).
 */

import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { CACHE_DEFAULTS, cachedSynthesize, cacheKey, openDiskCache } from '../src/cache/index.ts';
import { silentLogger } from '../src/log.ts';
import { countCharacters, needsAuthorPrefix, normaliseMessage } from '../src/text/normalise.ts';
import type { Speaker } from '../src/tts/index.ts';
import type { Synthesize } from '../src/voice/session.ts';

const MESSAGES = Number(process.env.MESSAGES ?? 5_000);
const SEED = 20_261_123;

/** The corpus: share of messages per kind, and what each kind draws from. */
const MIX = [
  { kind: 'greeting', share: 0.2 },
  { kind: 'reaction', share: 0.3 },
  { kind: 'repeated phrase', share: 0.2 },
  { kind: 'long unique', share: 0.3 },
] as const;
const GREETINGS = [
  'hi',
  'hello',
  'hey',
  'hey everyone',
  'good morning',
  'morning all',
  'gn',
  'good night',
  'yo',
  'hiya',
  'bye',
  'see you',
  'welcome back',
  'night all',
  'sup',
];
const REACTIONS = [
  'lol',
  'lmao',
  'gg',
  'nice',
  'wow',
  'same',
  'yes',
  'no',
  'true',
  'omg',
  'rip',
  'ok',
  'haha',
  'wp',
  'nooo',
  'yep',
  'oof',
  'what',
  'ty',
  'np',
];
const PHRASES = [
  'brb',
  'be right back',
  'one sec',
  'on my way',
  'I am here',
  'can you hear me',
  'you are muted',
  'my mic is broken',
  'let us go',
  'good game',
  'one more round',
  'I have to go',
  'wait for me',
  'who is up for a game',
];
const WORDS =
  'the a we they raid boss tonight after dinner map server patch update build guild quest loot tank healer queue ranked match stream clip video music playlist weekend tomorrow because maybe really honestly think should could would never always again better worse'.split(
    ' ',
  );
const MEMBERS = 12;
const SPEAKERS: Speaker[] = ['Bella', 'Adam', 'Nova'].map((name, i) => ({
  id: `speaker-${i}`,
  name,
  voiceKey: name,
  gender: null,
  languages: null,
}));
const NAMES = Array.from({ length: MEMBERS }, (_, i) => `Member ${String.fromCharCode(65 + i)}`);
/** Messages arrive this many seconds apart on average (a busy evening). */
const MEAN_GAP_S = 20;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
const random = mulberry32(SEED);
const secret = randomBytes(32);
/** Popular items come up far more often than rare ones (Zipf, s = 1). */
function zipf<T>(items: readonly T[]): T {
  const weights = items.map((_, i) => 1 / (i + 1));
  let pick = random() * weights.reduce((a, b) => a + b, 0);
  for (let i = 0; i < items.length; i++) {
    pick -= weights[i] ?? 0;
    if (pick <= 0) return items[i] as T;
  }
  return items[items.length - 1] as T;
}
function longMessage(n: number): string {
  const length = 8 + Math.floor(random() * 30);
  const words = Array.from({ length }, () => WORDS[Math.floor(random() * WORDS.length)]);
  return `${words.join(' ')} ${n}`;
}

interface Message {
  readonly kind: (typeof MIX)[number]['kind'];
  readonly author: number;
  readonly content: string;
  readonly at: number;
}
const corpus: Message[] = [];
let clock = 0;
for (let i = 0; i < MESSAGES; i++) {
  const roll = random();
  let cumulative = 0;
  const kind =
    MIX.find((m) => {
      cumulative += m.share;
      return roll < cumulative;
    })?.kind ?? 'long unique';
  const content =
    kind === 'greeting'
      ? zipf(GREETINGS)
      : kind === 'reaction'
        ? zipf(REACTIONS)
        : kind === 'repeated phrase'
          ? zipf(PHRASES)
          : longMessage(i);
  clock += -Math.log(1 - random()) * MEAN_GAP_S * 1000;
  corpus.push({ kind, author: Math.floor(random() * MEMBERS), content, at: clock });
}

interface Row {
  readonly scenario: string;
  readonly messages: number;
  readonly charactersWithout: number;
  readonly charactersWith: number;
  readonly hits: number;
  readonly hitRate: number;
  readonly saved: number;
  readonly byKind: Record<string, { messages: number; hits: number }>;
}

async function run(scenario: string, announceAuthor: boolean): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'herald-bench-cache-'));
  try {
    const disk = await openDiskCache({
      dir,
      maxBytes: CACHE_DEFAULTS.megabytes * 1024 * 1024,
      maxAgeMs: CACHE_DEFAULTS.days * 86_400_000,
      logger: silentLogger,
    });
    let billed = 0;
    let paidCalls = 0;
    // Stands in for the service: bills the characters and returns about 3 KiB of "audio" per second of speech.
    const paid: Synthesize = async (request) => {
      paidCalls++;
      const characters = countCharacters(request.text);
      billed += characters;
      const audio = new PassThrough();
      audio.end(Buffer.alloc(Math.max(200, characters * 120), characters % 251));
      return {
        audio,
        contentType: 'audio/ogg',
        format: 'opus',
        sampleRate: 48_000,
        durationS: characters / 15,
        costUsd: characters * 0.0001,
        balanceUsd: undefined,
        requestId: undefined,
        attempts: 1,
      };
    };
    const synthesize = cachedSynthesize(paid, {
      disk,
      store: { guildEnabled: async () => true, recordHit: async () => {} },
      keyOf: (request) =>
        cacheKey(secret, {
          text: request.text,
          speakerId: request.speaker.id,
          temperature: request.temperature,
          form: 'current',
          baseUrl: 'https://tts.example/v1',
        }),
      maxChars: CACHE_DEFAULTS.maxChars,
      estimateUsd: () => undefined,
      logger: silentLogger,
    });
    let without = 0;
    const byKind: Record<string, { messages: number; hits: number }> = {};
    let previous: { authorId: string; at: number } | undefined;
    for (const message of corpus) {
      const authorId = String(message.author);
      const prefix = announceAuthor && needsAuthorPrefix(previous, authorId, message.at);
      const text = normaliseMessage(
        { content: message.content, attachments: [], stickers: [] },
        {
          userName: () => undefined,
          roleName: () => undefined,
          channelName: () => undefined,
          linkDomains: false,
          emoji: 'name',
          maxChars: 300,
          repeatCap: 3,
          ...(prefix ? { authorPrefix: NAMES[message.author] ?? 'someone' } : {}),
        },
      );
      previous = { authorId, at: message.at };
      without += countCharacters(text);
      const before = paidCalls;
      const result = await synthesize(
        {
          text,
          speaker: SPEAKERS[message.author % SPEAKERS.length] as Speaker,
          requestedBy: { id: authorId, name: authorId },
          onFailure: () => {},
        },
        new AbortController().signal,
        'bench',
      );
      await drain(result.audio);
      const stats = byKind[message.kind] ?? { messages: 0, hits: 0 };
      byKind[message.kind] = stats;
      stats.messages++;
      if (paidCalls === before) stats.hits++;
    }
    const hits = Object.values(byKind).reduce((sum, k) => sum + k.hits, 0);
    return {
      scenario,
      messages: corpus.length,
      charactersWithout: without,
      charactersWith: billed,
      hits,
      hitRate: hits / corpus.length,
      saved: 1 - billed / without,
      byKind,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function drain(stream: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.on('data', () => {});
    stream.on('end', resolve);
    stream.on('error', reject);
  });
}

const rows = [
  await run('/speak, or auto-read without author names', false),
  await run('auto-read, "<name> said" on (default)', true),
];
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const table = [
  ['scenario', 'messages', 'billed without cache', 'billed with cache', 'characters saved', 'hit rate'],
  ...rows.map((r) => [
    r.scenario,
    String(r.messages),
    r.charactersWithout.toLocaleString('en'),
    r.charactersWith.toLocaleString('en'),
    pct(r.saved),
    pct(r.hitRate),
  ]),
];
const widths = table[0]?.map((_, c) => Math.max(...table.map((row) => (row[c] ?? '').length))) ?? [];
for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(' | '));
console.log(
  `\ncorpus: ${MIX.map((m) => `${m.kind} ${pct(m.share)}`).join(', ')}; ${MEMBERS} members over 3 voices; seed ${SEED}`,
);
for (const r of rows) {
  console.log(
    `hit rate by kind (${r.scenario}): ${Object.entries(r.byKind)
      .map(([kind, k]) => `${kind} ${pct(k.hits / k.messages)}`)
      .join(', ')}`,
  );
}
mkdirSync(join('bench', 'results'), { recursive: true });
writeFileSync(
  join('bench', 'results', 'cache.json'),
  `${JSON.stringify({ seed: SEED, mix: MIX, members: MEMBERS, voices: SPEAKERS.length, maxChars: CACHE_DEFAULTS.maxChars, rows }, null, 2)}\n`,
);
console.log('\nwritten: bench/results/cache.json');
