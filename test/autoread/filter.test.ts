import { describe, expect, it } from 'vitest';
import { type DecideContext, type Decision, decide, type MessageFacts } from '../../src/autoread/filter.ts';
import { type AutoReadSettings, defaultAutoReadSettings } from '../../src/autoread/settings.ts';

const BOUND = 'text-1';
const OTHER_TEXT = 'text-2';
const HERALD_VOICE = 'voice-1';
const OTHER_VOICE = 'voice-2';

const facts = (overrides: Partial<MessageFacts> = {}): MessageFacts => ({
  channelId: BOUND,
  authorId: 'ada',
  self: false,
  bot: false,
  webhook: false,
  system: false,
  silent: false,
  content: 'hello there',
  extras: 0,
  authorVoiceChannelId: HERALD_VOICE,
  ...overrides,
});
const settings = (overrides: Partial<AutoReadSettings> = {}): AutoReadSettings => ({
  ...defaultAutoReadSettings('g'),
  channelIds: [BOUND],
  ...overrides,
});
const context = (overrides: Partial<DecideContext> = {}): DecideContext => ({
  heraldVoiceChannelId: HERALD_VOICE,
  optedOut: false,
  ...overrides,
});

const read = (via: 'bound-channel' | 'voice-chat'): Decision => ({ kind: 'read', via });
const ignored = (reason: string): Decision => ({ kind: 'ignore', reason }) as Decision;

describe('decide', () => {
  it.each<[string, Partial<MessageFacts>, Partial<AutoReadSettings>, Partial<DecideContext>, Decision]>([
    ['a member in Herald’s voice channel writing in a bound channel', {}, {}, {}, read('bound-channel')],
    [
      'Herald not in voice in the server',
      {},
      {},
      { heraldVoiceChannelId: null },
      ignored('herald-not-in-voice'),
    ],
    ['a channel that is not bound', { channelId: OTHER_TEXT }, {}, {}, ignored('not-bound')],
    ['no channel bound at all', {}, { channelIds: [] }, {}, ignored('not-bound')],
    [
      'the chat of Herald’s voice channel (default on)',
      { channelId: HERALD_VOICE },
      { channelIds: [] },
      {},
      read('voice-chat'),
    ],
    [
      'the chat of Herald’s voice channel, setting off',
      { channelId: HERALD_VOICE },
      { channelIds: [], readVoiceChat: false },
      {},
      ignored('not-bound'),
    ],
    [
      'the chat of another voice channel',
      { channelId: OTHER_VOICE, authorVoiceChannelId: OTHER_VOICE },
      {},
      {},
      ignored('not-bound'),
    ],
    [
      'a voice channel that is also bound reads as bound',
      { channelId: HERALD_VOICE },
      { channelIds: [HERALD_VOICE] },
      {},
      read('bound-channel'),
    ],
    [
      'Herald’s own message, even with bots allowed',
      { self: true, bot: true },
      { ignoreBots: false },
      {},
      ignored('self'),
    ],
    ['a system message (join, pin)', { system: true }, {}, {}, ignored('system')],
    ['a bot', { bot: true }, {}, {}, ignored('bot')],
    [
      'a webhook (whose author is flagged bot too)',
      { webhook: true, bot: true, authorVoiceChannelId: null },
      {},
      {},
      ignored('webhook'),
    ],
    ['a bot in voice, bots allowed', { bot: true }, { ignoreBots: false }, {}, read('bound-channel')],
    [
      'a webhook, bots allowed: it has no voice state, so it is read',
      { webhook: true, bot: true, authorVoiceChannelId: null },
      { ignoreBots: false },
      {},
      read('bound-channel'),
    ],
    ['an opted-out member', {}, {}, { optedOut: true }, ignored('opted-out')],
    ['a @silent message', { silent: true }, {}, {}, ignored('silent')],
    ['a @silent message, setting off', { silent: true }, { skipSilent: false }, {}, read('bound-channel')],
    ['the default prefix', { content: '!play something' }, {}, {}, ignored('prefix')],
    ['the prefix after leading spaces', { content: '   !skip' }, {}, {}, ignored('prefix')],
    ['the prefix in the middle is no prefix', { content: 'wow!' }, {}, {}, read('bound-channel')],
    ['a custom prefix', { content: ';; note to self' }, { prefix: ';;' }, {}, ignored('prefix')],
    [
      'the old prefix after a custom one is set',
      { content: '!hi' },
      { prefix: ';;' },
      {},
      read('bound-channel'),
    ],
    ['no prefix configured reads everything', { content: '!hi' }, { prefix: '' }, {}, read('bound-channel')],
    ['a member not in voice', { authorVoiceChannelId: null }, {}, {}, ignored('not-in-voice')],
    [
      'a member in another voice channel',
      { authorVoiceChannelId: OTHER_VOICE },
      {},
      {},
      ignored('not-with-herald'),
    ],
    [
      'a member not in voice, same-voice rule off',
      { authorVoiceChannelId: null },
      { onlySameVoice: false },
      {},
      read('bound-channel'),
    ],
    [
      'a member elsewhere, same-voice rule off',
      { authorVoiceChannelId: OTHER_VOICE },
      { onlySameVoice: false },
      {},
      read('bound-channel'),
    ],
    ['an empty message', { content: '' }, {}, {}, ignored('empty')],
    ['a whitespace-only message', { content: ' \n\t ' }, {}, {}, ignored('empty')],
    ['an image without text is read ("an image")', { content: '', extras: 1 }, {}, {}, read('bound-channel')],
    // The first check that applies names the reason.
    ['not bound wins over bot', { channelId: OTHER_TEXT, bot: true }, {}, {}, ignored('not-bound')],
    ['bot wins over prefix', { bot: true, content: '!x' }, {}, {}, ignored('bot')],
    ['opted out wins over silent', { silent: true }, {}, { optedOut: true }, ignored('opted-out')],
    [
      'prefix wins over not in voice',
      { content: '!x', authorVoiceChannelId: null },
      {},
      {},
      ignored('prefix'),
    ],
  ])('%s', (_name, message, overrides, ctx, expected) => {
    expect(decide(facts(message), settings(overrides), context(ctx))).toEqual(expected);
  });
});
