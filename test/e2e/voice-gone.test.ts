/**
 * Where Herald may not be heard (issue 43, voice side): auto-join never takes it into the AFK channel (/speak and
 * /join: afk-channel.test.ts), and a voice channel deleted mid-sentence ends the session with one sentence, the
 * waste in the ledger.
 */

import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it, vi } from 'vitest';
import { type World, worldPerTest } from './harness.ts';

const open = worldPerTest();

/** What the service charged for, all servers together. */
const charged = (world: World): number =>
  world.tts.requests.filter((request) => request.chargedUsd > 0).length;

/** The `wasted` column of this server's speech rows, oldest first. */
function wasted(world: World): (string | null)[] {
  const db = new DatabaseSync(world.databasePath, { readOnly: true });
  try {
    const rows = db
      .prepare("SELECT wasted FROM budget_ledger WHERE kind = 'speech' AND guild_id = ? ORDER BY at, id")
      .all(world.guild.id) as { wasted: string | null }[];
    return rows.map((row) => row.wasted);
  } finally {
    db.close();
  }
}

describe('the AFK channel', () => {
  it('is never auto-joined: a message read aloud from a member sitting in it pays nothing', async () => {
    const w = await open();
    const afk = w.guild.addVoiceChannel('Away');
    w.guild.setAfkChannel(afk);
    await w.discord.slash(w.admin, 'autoread', { channel: w.text, enabled: true }, { subcommand: 'channel' });
    await w.discord.slash(w.admin, 'autoread', { 'auto-join': true }, { subcommand: 'set' });
    w.guild.joinVoice(w.member, afk);

    w.discord.sendMessage(w.member, w.text, 'is anybody there');
    await vi.waitFor(() => expect(w.logs.some((line) => line.includes('could not auto-join'))).toBe(true));
    expect(w.guild.botVoiceChannelId()).toBeNull();
    expect(charged(w)).toBe(0);
  });
});

describe('the voice channel going away', () => {
  it('deleted mid-sentence: one sentence in the announce channel, no further charge, the waste recorded, Herald alive', async () => {
    const w = await open({ tts: { speed: 1 } });
    const first = 'The first thing said, long enough to hear.';
    await w.discord.slash(w.member, 'speak', { text: first });
    await w.discord.slash(w.member, 'speak', { text: 'And then the second thing, said right after.' });
    await w.discord.slash(w.member, 'speak', { text: 'A third that should never be paid for.' });
    // The second is paid once its ledger row exists; the first is playing.
    await vi.waitFor(() => expect(wasted(w)).toHaveLength(2), { timeout: 10_000 });

    w.guild.deleteChannel(w.lounge);
    await w.discord.voice(w.guild).untilDisconnected();
    // The paid, unheard second utterance is recorded as wasted. Discord empties a deleted channel before its
    // CHANNEL_DELETE, so Herald has already left (alone, paying nothing more) when it learns of the deletion.
    await vi.waitFor(() => expect(wasted(w)).toEqual([null, 'alone']), { timeout: 10_000 });
    const paid = charged(w);
    expect(paid).toBe(2);

    // Exactly one sentence says why, in the channel /speak was used from.
    const said = () => w.discord.channelMessages(w.text).map((message) => message.content);
    await vi.waitFor(() => expect(said()).toHaveLength(1), { timeout: 5_000 });
    expect(said()).toEqual(['My voice channel was deleted; the queue is cleared.']);

    // The process lives: a member in another channel is heard, and only that is paid.
    const hall = w.guild.addVoiceChannel('Hall');
    w.guild.joinVoice(w.member, hall);
    expect((await w.discord.slash(w.member, 'speak', { text: 'Still here.' })).content).toMatch(
      /Speaking now/,
    );
    await w.discord.voice(w.guild).untilSilent({ quietMs: 300 });
    expect(charged(w)).toBe(paid + 1);
    // Seconds later, still the one sentence: no late "nobody is listening" for the deleted channel.
    expect(said()).toEqual(['My voice channel was deleted; the queue is cleared.']);
  });
});
