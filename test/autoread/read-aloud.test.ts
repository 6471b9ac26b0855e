import { type MessageContextMenuCommandInteraction, PermissionFlagsBits } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { readAloud } from '../../commands/read-aloud.ts';
import type { Deps } from '../../src/discord/command.ts';
import { silentLogger } from '../../src/log.ts';

// Refusals of "Read aloud" that the end-to-end tests cannot stage (Discord never offers the command on a message
// of a channel the member cannot see; a crafted interaction still gets a sentence, and nothing is looked up).

/** A cached message-command interaction whose member has `permissions` in the channel; replies are collected. */
function interaction(permissions: bigint) {
  const replies: string[] = [];
  const fake = {
    guildId: 'g1',
    user: { id: 'u1' },
    createdTimestamp: Date.now(),
    memberPermissions: { has: (bits: bigint) => (permissions & bits) === bits },
    deferred: false,
    replied: false,
    targetMessage: { id: 'm1', guildId: 'g1', author: { id: 'a1' } },
    reply: async (reply: { content: string }) => {
      replies.push(reply.content);
    },
  };
  return { replies, interaction: fake as unknown as MessageContextMenuCommandInteraction<'cached'> };
}

/** Deps that fail the test if anything is looked up. */
const untouched = new Proxy({ logger: silentLogger } as object, {
  get: (target, name) => {
    if (name in target) return (target as Record<string | symbol, unknown>)[name];
    throw new Error(`Read aloud looked up ${String(name)} before refusing`);
  },
}) as Deps;

describe('Read aloud', () => {
  it('is a message command for servers', () => {
    expect(readAloud.data.toJSON()).toMatchObject({ name: 'Read aloud', type: 3, contexts: [0] });
  });

  it.each([
    ['cannot see the channel', PermissionFlagsBits.ReadMessageHistory],
    ['cannot read its history', PermissionFlagsBits.ViewChannel],
  ])('refuses a member who %s, before looking anything up', async (_case, permissions) => {
    const { interaction: i, replies } = interaction(permissions);
    await readAloud.execute(i, untouched);
    expect(replies).toEqual(['You can’t read that channel, so I won’t read its messages to you.']);
  });
});
