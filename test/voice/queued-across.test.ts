import { describe, expect, it } from 'vitest';
import { queuedAcross } from '../../src/voice/manager.ts';

/** A server whose queue holds these utterances, not yet paid for: [member, characters]. */
const server = (...queued: [string, number][]) => ({
  session: {
    queuedCharacters: (userId?: string) => ({
      all: queued.reduce((sum, [, characters]) => sum + characters, 0),
      member: queued.reduce((sum, [who, characters]) => sum + (who === userId ? characters : 0), 0),
    }),
  },
});

describe('queuedAcross', () => {
  it('counts the member in every server, everyone in theirs, and everyone everywhere', () => {
    const sessions = new Map([
      ['g1', server(['u1', 5], ['u2', 7])],
      ['g2', server(['u1', 11])],
      ['g3', server(['u3', 13])],
    ]);
    expect(queuedAcross(sessions, 'g1', 'u1')).toEqual({ member: 16, guild: 12, all: 36 });
    expect(queuedAcross(sessions, 'g3', 'u2')).toEqual({ member: 7, guild: 13, all: 36 });
  });

  it('counts nothing for a server Herald is not in voice in', () => {
    expect(queuedAcross(new Map([['g1', server(['u1', 5])]]), 'g9', 'u1')).toEqual({
      member: 5,
      guild: 0,
      all: 5,
    });
  });
});
