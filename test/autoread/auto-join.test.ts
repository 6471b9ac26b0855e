import { describe, expect, it } from 'vitest';
import { createVoiceAutoJoin, type VoiceMove } from '../../src/autoread/auto-join.ts';
import { defaultAutoReadSettings } from '../../src/autoread/settings.ts';
import { silentLogger } from '../../src/log.ts';

function setup(options: { autoJoin: boolean; bound: string[]; inVoice?: boolean }) {
  const joins: string[] = [];
  const joiner = createVoiceAutoJoin({
    store: {
      settings: async (guildId) => ({
        ...defaultAutoReadSettings(guildId),
        autoJoin: options.autoJoin,
        channelIds: options.bound,
      }),
    },
    voice: {
      get: () =>
        options.inVoice
          ? {
              channelId: 'v9',
              enqueue: () => ({ kind: 'queued' as const, ahead: 0 }),
              withdraw: () => false,
              replace: () => false,
            }
          : undefined,
    },
    join: (_guildId, channelId) => {
      joins.push(channelId);
      return undefined;
    },
    logger: silentLogger,
  });
  return { joiner, joins };
}
const move = (o: Partial<VoiceMove>): VoiceMove => ({
  guildId: 'g',
  bot: false,
  oldChannelId: null,
  newChannelId: 'v1',
  ...o,
});

describe('auto-join on a voice move', () => {
  it.each([
    ['a member joins a read voice channel', { autoJoin: true, bound: ['v1'] }, move({}), ['v1']],
    ['the setting is off', { autoJoin: false, bound: ['v1'] }, move({}), []],
    ['the channel is not read', { autoJoin: true, bound: ['t1'] }, move({}), []],
    ['Herald is already in voice', { autoJoin: true, bound: ['v1'], inVoice: true }, move({}), []],
    ['a bot joins', { autoJoin: true, bound: ['v1'] }, move({ bot: true }), []],
    [
      'the member leaves',
      { autoJoin: true, bound: ['v1'] },
      move({ oldChannelId: 'v1', newChannelId: null }),
      [],
    ],
    ['the member only mutes', { autoJoin: true, bound: ['v1'] }, move({ oldChannelId: 'v1' }), []],
  ])('%s', async (_name, options, voiceMove, expected) => {
    const { joiner, joins } = setup(options);
    await joiner.onVoiceMove(voiceMove);
    expect(joins).toEqual(expected);
  });
});
