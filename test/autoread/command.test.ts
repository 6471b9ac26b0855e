import type { ChatInputCommandInteraction } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import { autoread } from '../../commands/autoread.ts';
import {
  type AutoReadStore,
  createAutoReadStore,
  defaultAutoReadSettings,
} from '../../src/autoread/settings.ts';
import type { Deps } from '../../src/discord/command.ts';
import { silentLogger } from '../../src/log.ts';
import { openDatabase } from '../../src/storage/index.ts';

// ---- tiny fakes ---------------------------------------------------------------------------------------------

const GUILD = 'g1';
type OptionValue =
  | string
  | number
  | boolean
  | { id: string; permissionsFor(me: unknown): { has(): boolean } };

/** A cached slash-command interaction with only what /autoread touches; replies are collected. */
function interaction(subcommand: string, options: Record<string, OptionValue>, manageGuild = false) {
  const replies: string[] = [];
  const value = (name: string) => options[name] ?? null;
  const fake = {
    guildId: GUILD,
    user: { id: 'u1' },
    guild: { members: { me: {} } },
    memberPermissions: { has: () => manageGuild },
    deferred: false,
    replied: false,
    options: {
      getSubcommand: () => subcommand,
      getBoolean: value,
      getString: value,
      getInteger: value,
      getChannel: value,
    },
    reply: async (reply: { content: string }) => {
      replies.push(reply.content);
    },
  };
  return { replies, interaction: fake as unknown as ChatInputCommandInteraction<'cached'> };
}

const channel = (id: string, visible = true) => ({ id, permissionsFor: () => ({ has: () => visible }) });

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup(): Promise<{ store: AutoReadStore; deps: Deps & { autoread: AutoReadStore } }> {
  const db = openDatabase({ kind: 'sqlite', path: ':memory:' });
  closers.push(() => db.close());
  const store = await createAutoReadStore(db);
  // Only `autoread` is used by this command.
  const deps = { autoread: store, logger: silentLogger } as unknown as Deps & { autoread: AutoReadStore };
  return { store, deps };
}

// ---- tests --------------------------------------------------------------------------------------------------

describe('/autoread', () => {
  it('is one command with four subcommands, open to everyone (admin checks are in the handler)', () => {
    const json = autoread.data.toJSON();
    expect(json.name).toBe('autoread');
    expect(json.options?.map((option) => option.name)).toEqual(['channel', 'set', 'show', 'me']);
    expect(json.default_member_permissions ?? null).toBeNull();
  });

  it.each([
    ['channel', { channel: channel('c1'), enabled: true }],
    ['set', { 'max-chars': 100 }],
  ])('refuses %s without Manage Server and changes nothing', async (subcommand, options) => {
    const { store, deps } = await setup();
    const { interaction: i, replies } = interaction(subcommand, options, false);
    await autoread.execute(i, deps);
    expect(replies[0]).toMatch(/Manage Server/);
    expect(await store.settings(GUILD)).toEqual(defaultAutoReadSettings(GUILD));
  });

  it('binds and unbinds a channel', async () => {
    const { store, deps } = await setup();
    const bind = interaction('channel', { channel: channel('c1'), enabled: true }, true);
    await autoread.execute(bind.interaction, deps);
    expect(bind.replies[0]).toMatch(/read new messages in <#c1>/);
    expect((await store.settings(GUILD)).channelIds).toEqual(['c1']);

    const again = interaction('channel', { channel: channel('c1'), enabled: true }, true);
    await autoread.execute(again.interaction, deps);
    expect(again.replies[0]).toMatch(/already read/);

    const unbind = interaction('channel', { channel: channel('c1'), enabled: false }, true);
    await autoread.execute(unbind.interaction, deps);
    expect(unbind.replies[0]).toMatch(/no longer read <#c1>/);
    expect((await store.settings(GUILD)).channelIds).toEqual([]);
  });

  it('warns when Herald cannot see the channel it was asked to read', async () => {
    const { deps } = await setup();
    const bind = interaction('channel', { channel: channel('c2', false), enabled: true }, true);
    await autoread.execute(bind.interaction, deps);
    expect(bind.replies[0]).toMatch(/View Channel/);
  });

  it('changes only the settings given; "none" clears the prefix', async () => {
    const { store, deps } = await setup();
    const set = interaction(
      'set',
      { 'max-chars': 120, prefix: ' None ', emoji: 'drop', 'same-voice-only': false },
      true,
    );
    await autoread.execute(set.interaction, deps);
    expect(await store.settings(GUILD)).toEqual({
      ...defaultAutoReadSettings(GUILD),
      maxChars: 120,
      prefix: '',
      emoji: 'drop',
      onlySameVoice: false,
    });
    expect(set.replies[0]).toMatch(/^Saved\./);
    expect(set.replies[0]).toMatch(/at most 120 characters/);
  });

  it('shows the settings without changing them when set is given no option', async () => {
    const { store, deps } = await setup();
    const set = interaction('set', {}, true);
    await autoread.execute(set.interaction, deps);
    expect(set.replies[0]).toMatch(/Nothing to change/);
    expect(await store.settings(GUILD)).toEqual(defaultAutoReadSettings(GUILD));
  });

  it('lets any member opt out and back in, and show tells them which', async () => {
    const { store, deps } = await setup();
    await autoread.execute(interaction('me', { enabled: false }).interaction, deps);
    expect(await store.optedOut(GUILD, 'u1')).toBe(true);
    const shown = interaction('show', {});
    await autoread.execute(shown.interaction, deps);
    expect(shown.replies[0]).toMatch(/You: not read/);
    expect(shown.replies[0]).toMatch(/Channels: none yet/);
    expect(shown.replies[0]).toMatch(/starting with “!”/);

    await autoread.execute(interaction('me', { enabled: true }).interaction, deps);
    expect(await store.optedOut(GUILD, 'u1')).toBe(false);
  });
});
