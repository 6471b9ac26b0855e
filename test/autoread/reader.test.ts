import type { Message, PartialMessage } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AutoReader,
  type AutoReaderOptions,
  createAutoReader,
  type IncomingMessage,
} from '../../src/autoread/reader.ts';
import { type AutoReadStore, createAutoReadStore } from '../../src/autoread/settings.ts';
import { createLogger } from '../../src/log.ts';
import { createSettingsStore, openDatabase } from '../../src/storage/index.ts';
import { countCharacters } from '../../src/text/normalise.ts';
import type { Speaker } from '../../src/tts/index.ts';
import type { SpeechRequest } from '../../src/voice/session.ts';

// ---- tiny fakes ---------------------------------------------------------------------------------------------

const GUILD = 'g1';
const BOUND = 'text-bound';
const VOICE = 'voice-herald';

const speaker = (id: string, name: string): Speaker => ({
  id,
  name,
  voiceKey: id,
  gender: null,
  languages: null,
});
const ADA_VOICE = speaker('s-ada', 'Ada voice');
const SERVER_VOICE = speaker('s-server', 'Server voice');
const FIRST_VOICE = speaker('s-first', 'First voice');

// Discord ids are snowflakes (digits); mention syntax only matches those.
const ADA = '101';
const BOB = '102';
const CARL = '103';
const HERALD = '900';
const guild = {
  members: new Map([
    [ADA, { displayName: 'Ada' }],
    [BOB, { displayName: 'Bob' }],
  ]),
  roles: new Map([['201', { name: 'Moderators' }]]),
  channels: new Map([['301', { name: 'general' }]]),
};

let nextId = 1;
function message(overrides: Partial<IncomingMessage> & { voice?: string | null; silent?: boolean } = {}) {
  const { voice = VOICE, silent = false, ...rest } = overrides;
  const authorId = rest.author?.id ?? ADA;
  return {
    id: `m${nextId++}`,
    guildId: GUILD,
    channelId: BOUND,
    content: 'hello there',
    system: false,
    webhookId: null,
    author: { id: authorId, bot: false, displayName: `${authorId}-global` },
    member: {
      displayName: guild.members.get(authorId)?.displayName ?? authorId,
      voice: { channelId: voice },
    },
    flags: { has: (flag: number) => silent && flag === 4096 },
    attachments: new Map<string, { name: string; contentType: string | null }>(),
    stickers: new Map<string, { name: string }>(),
    mentions: { users: new Map([[CARL, { displayName: 'Carl' }]]) },
    client: { user: { id: HERALD } },
    guild: {
      members: { cache: guild.members },
      roles: { cache: guild.roles },
      channels: { cache: guild.channels },
    },
    ...rest,
  } satisfies IncomingMessage;
}

function fakeSession(channelId: string | null = VOICE) {
  const queue: SpeechRequest[] = [];
  return {
    channelId,
    queue,
    enqueue(request: SpeechRequest) {
      queue.push(request);
      return { kind: 'queued' as const, ahead: queue.length - 1 };
    },
    withdraw(key: string) {
      const index = queue.findIndex((request) => request.key === key);
      if (index !== -1) queue.splice(index, 1);
      return index !== -1;
    },
    replace(request: SpeechRequest) {
      const index = queue.findIndex((queued) => queued.key === request.key);
      if (index !== -1) queue[index] = request;
      return index !== -1;
    },
  };
}

interface Harness {
  readonly reader: AutoReader;
  readonly store: AutoReadStore;
  readonly sessions: Map<string, ReturnType<typeof fakeSession>>;
  readonly logs: { level: string; msg: string; reason?: string }[];
  readonly clock: { now: number };
  readonly texts: () => string[];
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function harness(overrides: Partial<AutoReaderOptions> = {}): Promise<Harness> {
  const db = openDatabase({ kind: 'sqlite', path: ':memory:' });
  closers.push(() => db.close());
  const settings = await createSettingsStore(db);
  const store = await createAutoReadStore(db);
  await store.bindChannel(GUILD, BOUND, true);
  await settings.setGuildSpeaker(GUILD, SERVER_VOICE.id);
  await settings.setMemberSpeaker(GUILD, ADA, ADA_VOICE.id);
  const session = fakeSession();
  const sessions = new Map([[GUILD, session]]);
  const logs: Harness['logs'] = [];
  const clock = { now: 1_000_000 };
  const reader = createAutoReader({
    store,
    voice: { get: (guildId) => sessions.get(guildId) },
    settings,
    tts: { speakers: async () => [FIRST_VOICE, SERVER_VOICE, ADA_VOICE] },
    defaultSpeaker: undefined,
    logger: createLogger({ level: 'debug', write: (line) => logs.push(JSON.parse(line)) }),
    now: () => clock.now,
    ...overrides,
  });
  const texts = () => (sessions.get(GUILD)?.queue ?? []).map((request) => request.text);
  return { reader, store, sessions, logs, clock, texts };
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

// ---- tests --------------------------------------------------------------------------------------------------

describe('auto-reader', () => {
  it('accepts discord.js messages as they are (a compile-time check)', async () => {
    const { reader } = await harness();
    const create: (message: Message) => Promise<void> = reader.onMessageCreate;
    const remove: (message: Message | PartialMessage) => void = reader.onMessageDelete;
    expect([typeof create, typeof remove]).toEqual(['function', 'function']);
  });

  it('queues a bound channel’s message with the author’s name, voice, and the message id as key', async () => {
    const { reader, sessions } = await harness();
    const sent = message();
    await reader.onMessageCreate(sent);
    const [request] = sessions.get(GUILD)?.queue ?? [];
    expect(request?.text).toBe('Ada said, hello there');
    expect(request?.speaker).toEqual(ADA_VOICE);
    expect(request?.key).toBe(sent.id);
    expect(request?.requestedBy).toEqual({ id: ADA, name: 'Ada' });
  });

  it('falls back to the server voice for a member without one', async () => {
    const { reader, sessions } = await harness();
    await reader.onMessageCreate(message({ author: { id: BOB, bot: false, displayName: 'bob-global' } }));
    expect(sessions.get(GUILD)?.queue[0]?.speaker).toEqual(SERVER_VOICE);
  });

  it('speaks mentions as names: nickname, mentioned user, role, channel', async () => {
    const { reader, texts } = await harness();
    await reader.onMessageCreate(message({ content: `hi <@${BOB}> and <@!${CARL}>, ask <@&201> in <#301>` }));
    expect(texts()).toEqual(['Ada said, hi Bob and Carl, ask Moderators in general']);
  });

  it.each([
    ['another channel', message({ channelId: 'elsewhere' }), 'not-bound'],
    ['a bot', message({ author: { id: '104', bot: true, displayName: 'Botty' } }), 'bot'],
    ['a webhook', message({ webhookId: 'w1', member: null }), 'webhook'],
    [
      'Herald’s own notice',
      message({ author: { id: HERALD, bot: true, displayName: 'Herald' }, member: null }),
      'self',
    ],
    ['the ignore prefix', message({ content: '!play a song' }), 'prefix'],
    ['a @silent message', message({ silent: true }), 'silent'],
    ['a member not in voice', message({ voice: null }), 'not-in-voice'],
    ['a member in another voice channel', message({ voice: 'voice-other' }), 'not-with-herald'],
    ['nothing speakable', message({ content: '*** ~~ ||' }), 'empty'],
  ])('does not read %s', async (_name, sent, reason) => {
    const { reader, texts, logs } = await harness();
    await reader.onMessageCreate(sent);
    expect(texts()).toEqual([]);
    expect(logs.filter((line) => line.msg === 'auto-read ignored a message').map((l) => l.reason)).toEqual([
      reason,
    ]);
  });

  it('does not read a member who opted out, and reads them again after they opt back in', async () => {
    const { reader, store, texts } = await harness();
    await store.setOptedOut(GUILD, ADA, true);
    await reader.onMessageCreate(message({ content: 'first' }));
    await store.setOptedOut(GUILD, ADA, false);
    await reader.onMessageCreate(message({ content: 'second' }));
    expect(texts()).toEqual(['Ada said, second']);
  });

  it('reads the chat of Herald’s voice channel, unless that setting is off', async () => {
    const { reader, store, texts } = await harness();
    await reader.onMessageCreate(message({ channelId: VOICE, content: 'from voice chat' }));
    await store.update(GUILD, { readVoiceChat: false });
    await reader.onMessageCreate(message({ channelId: VOICE, content: 'not any more' }));
    expect(texts()).toEqual(['Ada said, from voice chat']);
  });

  it('never joins: without a session nothing is read and storage is not touched', async () => {
    let reads = 0;
    const base = await harness();
    const counting: AutoReadStore = {
      ...base.store,
      settings: (guildId) => {
        reads++;
        return base.store.settings(guildId);
      },
    };
    const { reader, sessions } = await harness({ store: counting });
    sessions.delete(GUILD);
    await reader.onMessageCreate(message());
    expect(reads).toBe(0);
    expect(sessions.size).toBe(0);
  });

  it('says the author’s name again only after the window, or after someone else spoke', async () => {
    const { reader, texts, clock, store } = await harness();
    const bob = { id: BOB, bot: false, displayName: 'bob-global' };
    await reader.onMessageCreate(message({ content: 'one' }));
    clock.now += 59_000;
    await reader.onMessageCreate(message({ content: 'two' }));
    clock.now += 61_000;
    await reader.onMessageCreate(message({ content: 'three' }));
    await reader.onMessageCreate(message({ content: 'four', author: bob }));
    await reader.onMessageCreate(message({ content: 'five' }));
    await store.update(GUILD, { announceAuthor: false });
    await reader.onMessageCreate(message({ content: 'six', author: bob }));
    expect(texts()).toEqual([
      'Ada said, one',
      'two',
      'Ada said, three',
      'Bob said, four',
      'Ada said, five',
      'six',
    ]);
  });

  it('cuts a long message to the server’s limit before paying, ending with "and more"', async () => {
    const { reader, store, texts } = await harness();
    await store.update(GUILD, { maxChars: 40 });
    await reader.onMessageCreate(
      message({ content: Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ') }),
    );
    const [text] = texts();
    expect(text).toMatch(/^Ada said, word0 word1 .* and more$/);
    expect(countCharacters(text ?? '')).toBeLessThanOrEqual(40);
  });

  it('queues five quick messages in arrival order even when the first lookup is the slowest', async () => {
    const gate = deferred<readonly Speaker[]>();
    let calls = 0;
    const { reader, texts } = await harness({
      tts: {
        speakers: () => (calls++ === 0 ? gate.promise : Promise.resolve([ADA_VOICE])),
      },
    });
    const sent = ['one', 'two', 'three', 'four', 'five'].map((content) => message({ content }));
    const done = sent.map((m) => reader.onMessageCreate(m));
    await new Promise((resolve) => setImmediate(resolve));
    expect(texts()).toEqual([]);
    gate.resolve([ADA_VOICE]);
    await Promise.all(done);
    expect(texts()).toEqual(['Ada said, one', 'two', 'three', 'four', 'five']);
  });

  it('decides on the message as it arrived, though discord.js mutates cached authors afterwards', async () => {
    const gate = deferred<readonly Speaker[]>();
    let calls = 0;
    const { reader, texts } = await harness({
      tts: { speakers: () => (calls++ === 0 ? gate.promise : Promise.resolve([ADA_VOICE])) },
    });
    const first = reader.onMessageCreate(message({ content: 'first' }));
    const author = { id: '104', bot: true, displayName: 'Botty' };
    const fromBot = reader.onMessageCreate(message({ content: 'beep', author }));
    // A later event patches the same cached user while the bot's message still waits its turn.
    author.bot = false;
    gate.resolve([ADA_VOICE]);
    await Promise.all([first, fromBot]);
    expect(texts()).toEqual(['Ada said, first']);
  });

  it('withdraws a queued message that is deleted', async () => {
    const { reader, texts } = await harness();
    const doomed = message({ content: 'oops' });
    await reader.onMessageCreate(message({ content: 'keep' }));
    await reader.onMessageCreate(doomed);
    await reader.onMessageCreate(message({ content: 'also keep' }));
    reader.onMessageDelete({ id: doomed.id, guildId: GUILD });
    expect(texts()).toEqual(['Ada said, keep', 'also keep']);
  });

  it('reads an edit of a waiting message in its place, keeping the author-name choice', async () => {
    const { reader, texts } = await harness();
    const edited = message({ content: 'frist draft' });
    await reader.onMessageCreate(edited);
    await reader.onMessageCreate(message({ content: 'next' }));
    await reader.onMessageUpdate({ ...edited, content: 'first draft, fixed' });
    expect(texts()).toEqual(['Ada said, first draft, fixed', 'next']);
  });

  it('withdraws a waiting message edited into one not to read, and never queues an edit of an unread one', async () => {
    const { reader, texts } = await harness();
    const edited = message({ content: 'read me' });
    await reader.onMessageCreate(edited);
    await reader.onMessageUpdate({ ...edited, content: '!not for reading' });
    expect(texts()).toEqual([]);
    // Never queued (another channel): its edit queues nothing either.
    const elsewhere = message({ content: 'elsewhere', channelId: 'other-channel' });
    await reader.onMessageCreate(elsewhere);
    await reader.onMessageUpdate({ ...elsewhere, channelId: BOUND, content: 'now here' });
    expect(texts()).toEqual([]);
  });

  it('never queues a message deleted while its lookups were still running', async () => {
    const gate = deferred<readonly Speaker[]>();
    const { reader, texts } = await harness({ tts: { speakers: () => gate.promise } });
    const doomed = message({ content: 'oops' });
    const done = reader.onMessageCreate(doomed);
    reader.onMessageDelete({ id: doomed.id, guildId: GUILD });
    gate.resolve([ADA_VOICE]);
    await done;
    expect(texts()).toEqual([]);
  });

  it('drops a message when Herald left voice while it was being prepared', async () => {
    const gate = deferred<readonly Speaker[]>();
    const { reader, sessions } = await harness({ tts: { speakers: () => gate.promise } });
    const session = sessions.get(GUILD);
    const done = reader.onMessageCreate(message());
    sessions.delete(GUILD);
    gate.resolve([ADA_VOICE]);
    await done;
    expect(session?.queue).toEqual([]);
  });

  it('logs a failure and keeps reading the next messages', async () => {
    let calls = 0;
    const { reader, texts, logs } = await harness({
      tts: {
        speakers: async () => {
          if (calls++ === 0) throw new Error('speech service down');
          return [ADA_VOICE];
        },
      },
    });
    await expect(reader.onMessageCreate(message({ content: 'lost' }))).resolves.toBeUndefined();
    await reader.onMessageCreate(message({ content: 'heard' }));
    expect(texts()).toEqual(['Ada said, heard']);
    expect(logs.some((line) => line.level === 'warn' && line.msg === 'auto-read failed on a message')).toBe(
      true,
    );
  });

  it('logs, without the message text, when an utterance later fails to play', async () => {
    const { reader, sessions, logs } = await harness();
    await reader.onMessageCreate(message({ content: 'a private thought' }));
    sessions.get(GUILD)?.queue[0]?.onFailure(new Error('boom'));
    const warning = logs.find((line) => line.msg === 'auto-read could not speak a message');
    expect(warning).toBeDefined();
    expect(JSON.stringify(warning)).not.toContain('private thought');
  });

  it('reports that no voice exists instead of throwing', async () => {
    const { reader, texts, logs } = await harness({ tts: { speakers: async () => [] } });
    await reader.onMessageCreate(message());
    expect(texts()).toEqual([]);
    expect(logs.some((line) => line.level === 'warn' && /lists none/.test(line.msg))).toBe(true);
  });
});
