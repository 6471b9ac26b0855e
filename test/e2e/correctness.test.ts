/**
 * The defects a review reproduced against the real process, each as a test that failed on the code it found them
 * in: an abort while the next utterance downloads, paid audio never heard, a guard that failed open or locked for
 * good, unbounded queues and Discord's three-second deadline.
 */

import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it, vi } from 'vitest';
import type { Channel, Guild, Member } from '../../emulators/discord/index.ts';
import { expectedDurationMs } from '../../emulators/tts/index.ts';
import { type World, worldPerTest } from './harness.ts';

const open = worldPerTest();

/** The ledger as Herald wrote it (read from its database file while it runs). */
function ledger(world: World, guildId = world.guild.id): { wasted: string | null }[] {
  const db = new DatabaseSync(world.databasePath, { readOnly: true });
  try {
    return db
      .prepare("SELECT wasted FROM budget_ledger WHERE kind = 'speech' AND guild_id = ? ORDER BY at, id")
      .all(guildId) as { wasted: string | null }[];
  } finally {
    db.close();
  }
}

/** The tone the TTS emulator gives a voice, by name. */
function toneOf(world: World, name: string): number {
  const speaker = world.tts.speakers.find((candidate) => candidate.name === name);
  if (!speaker) throw new Error(`no voice ${name}`);
  return speaker.toneHz;
}

const generations = (world: World): number =>
  world.tts.requests.filter((request) => request.path.endsWith('/speech/generate')).length;

/** A second server with a member in voice, so a failure in the first can be seen not to silence it. */
async function secondServer(world: World): Promise<{ guild: Guild; member: Member; voice: Channel }> {
  const guild = world.discord.createGuild({ name: 'Neighbours' });
  guild.addTextChannel('chat');
  const voice = guild.addVoiceChannel('Hall');
  const member = guild.addMember({ name: 'Nina Neighbour' });
  guild.joinVoice(member, voice);
  await vi.waitFor(() => expect(world.herald().client.guilds.cache.has(guild.id)).toBe(true));
  return { guild, member, voice };
}

// About two seconds each at 40 ms a character: long enough to be cut while the next one downloads.
const FIRST = 'The first thing said, long enough to hear.';
const SECOND = 'And then the second thing, said right after.';

describe('dropping paid audio at any moment', () => {
  // The TTS emulator streams at real time here, so the utterance synthesised next is still downloading when the
  // one playing ends; before the fix, destroying its read-ahead buffer then threw an unhandled 'error' event.
  it.each([
    [
      '/stop',
      'stop',
      async (w: World): Promise<void> => {
        await w.discord.slash(w.member, 'stop');
      },
    ],
    [
      '/leave',
      'left',
      async (w: World): Promise<void> => {
        await w.discord.slash(w.member, 'leave');
      },
    ],
    [
      'a kick',
      'kicked',
      async (w: World): Promise<void> => {
        w.guild.moveBot(null);
      },
    ],
    [
      'everyone leaving',
      'alone',
      async (w: World) => {
        w.guild.leaveVoice(w.admin);
        w.guild.leaveVoice(w.member);
      },
    ],
  ] as const)(
    '%s while the next utterance downloads: the process lives, the other server speaks, the waste is in the ledger',
    async (_name, reason, act) => {
      const w = await open({ tts: { speed: 1 } });
      const other = await secondServer(w);
      await w.discord.slash(w.member, 'speak', { text: FIRST });
      await w.discord.slash(w.member, 'speak', { text: SECOND });
      // The second is paid (its headers arrived) once its ledger row exists; its audio is still streaming in.
      await vi.waitFor(() => expect(ledger(w)).toHaveLength(2), { timeout: 10_000 });
      const otherSpeaks = w.discord.slash(other.member, 'speak', { text: 'Meanwhile, next door.' });
      await act(w);
      await otherSpeaks;
      const heardNextDoor = await w.discord.voice(other.guild).untilSilent({ quietMs: 500 });
      expect(heardNextDoor.soundMs).toBeGreaterThan(500);

      // A kick is told from a move only after a grace period: wait for the session to end.
      await vi.waitFor(() => expect(ledger(w).map((row) => row.wasted)).toEqual([null, reason]), {
        timeout: 10_000,
      });
      // Herald still answers in the server where it happened.
      if (reason === 'alone') w.guild.joinVoice(w.member, w.lounge);
      const again = await w.discord.slash(w.member, 'speak', { text: 'Still here.' });
      expect(again.content).toMatch(/Speaking now|Queued/);
    },
  );

  it('shutdown while the next utterance downloads: it is played out rather than wasted, and Herald comes back', async () => {
    const w = await open({ tts: { speed: 1 } });
    await w.discord.slash(w.member, 'speak', { text: FIRST });
    await w.discord.slash(w.member, 'speak', { text: SECOND });
    await vi.waitFor(() => expect(ledger(w)).toHaveLength(2), { timeout: 10_000 });
    await w.restart();
    expect(ledger(w).map((row) => row.wasted)).toEqual([null, null]);
    expect((await w.discord.voice(w.guild).untilSilent({ quietMs: 600 })).soundMs).toBeGreaterThan(
      expectedDurationMs(FIRST) + expectedDurationMs(SECOND) - 300,
    );
    const again = await w.discord.slash(w.member, 'speak', { text: 'Still here.' });
    expect(again.content).toMatch(/Speaking now|Queued/);
  });

  it('deleting a message auto-read has already paid for: withdrawn, recorded as wasted, nothing crashes', async () => {
    const w = await open({ tts: { speed: 1 } });
    await w.discord.slash(w.admin, 'autoread', { channel: w.text, enabled: true }, { subcommand: 'channel' });
    await w.discord.slash(w.member, 'join');
    w.discord.sendMessage(w.member, w.text, FIRST);
    const second = w.discord.sendMessage(w.member, w.text, SECOND);
    await vi.waitFor(() => expect(ledger(w)).toHaveLength(2), { timeout: 10_000 });
    w.discord.deleteMessage(second);
    await vi.waitFor(() => expect(ledger(w).map((row) => row.wasted)).toEqual([null, 'withdrawn']));
    const heard = await w.discord.voice(w.guild).untilSilent({ quietMs: 600 });
    // Only the first message is heard: as long as the text the service was sent for it, not a frame more.
    const sent = w.tts.requests.filter((request) => request.path.endsWith('/speech/generate'));
    const firstSent = (sent[0]?.body as { text?: string } | undefined)?.text ?? '';
    expect(heard.soundMs).toBeLessThan(expectedDurationMs(firstSent) + 100);
    expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(firstSent) - 300);
  });
});

describe('an event Discord delivers twice (a gateway replay)', () => {
  it('a /speak and a message read aloud are each paid for and spoken once', async () => {
    const w = await open();
    await w.discord.slash(w.admin, 'autoread', { channel: w.text, enabled: true }, { subcommand: 'channel' });
    w.discord.faults.deliverTwice('INTERACTION_CREATE');
    const reply = await w.discord.slash(w.member, 'speak', { text: FIRST });
    expect(reply.content).toMatch(/^Speaking now/);
    await w.discord.voice(w.guild).untilSilent({ quietMs: 500 });
    expect(generations(w)).toBe(1);
    w.discord.faults.deliverTwice('MESSAGE_CREATE');
    w.discord.sendMessage(w.member, w.text, 'Read this one out once.');
    await w.discord.voice(w.guild).untilSilent({ quietMs: 500 });
    expect(generations(w)).toBe(2);
    expect(ledger(w)).toHaveLength(2);
    // The interaction is dropped by Herald, the message by discord.js (it has it in its cache already).
    expect(w.logs.filter((line) => /ignored an interaction Discord delivered twice/.test(line))).toHaveLength(
      1,
    );
  });
});

describe('paying as late as gapless playback allows', () => {
  it('/stop with three queued behind the one playing: at most one charge beyond what was heard', async () => {
    const w = await open();
    for (const text of [FIRST, SECOND, 'A third one.', 'And a fourth.']) {
      await w.discord.slash(w.member, 'speak', { text });
    }
    await w.discord.voice(w.guild).untilFrames(10);
    await w.discord.slash(w.member, 'stop');
    await w.discord.voice(w.guild).untilSilent({ quietMs: 500 });
    expect(generations(w)).toBeLessThanOrEqual(2);
    const rows = ledger(w);
    expect(rows[0]?.wasted).toBeNull();
    expect(rows.slice(1).map((row) => row.wasted)).toEqual(rows.slice(1).map(() => 'stop'));
  });

  it('a join Discord never completes costs nothing', async () => {
    const w = await open({ voiceConnectTimeoutMs: 1_500 });
    w.discord.faults.refuseVoiceJoin(true);
    for (const text of [FIRST, SECOND, 'A third one.']) {
      await w.discord.slash(w.member, 'speak', { text });
    }
    const told = await w.discord.untilChannelMessage(w.text, {
      match: (message) => /could not connect/.test(message.content),
    });
    expect(told.content).toMatch(/Discord did not complete the voice connection/);
    expect(generations(w)).toBe(0);
    expect(ledger(w)).toHaveLength(0);
  });

  it('/skip cuts the voice playing (the rest of it is not heard) and the next plays in full', async () => {
    const w = await open();
    const long = 'This one is long and will be cut off well before it gets anywhere near its end.';
    await w.discord.slash(w.member, 'speak', { text: long, speaker: 'Adam' });
    await w.discord.slash(w.member, 'speak', { text: SECOND, speaker: 'Bella' });
    await w.discord.voice(w.guild).untilFrames(25);
    await w.discord.slash(w.member, 'skip');
    const heard = await w.discord.voice(w.guild).untilSilent({ quietMs: 600 });
    // Cut well short of its length, and the next heard whole: at most half the first plus all of the second
    // (played in full, the two would be 5 s), at least the 25 frames heard before the skip plus the second.
    expect(heard.soundMs).toBeLessThan(expectedDurationMs(long) / 2 + expectedDurationMs(SECOND));
    expect(heard.soundMs).toBeGreaterThan(500 + expectedDurationMs(SECOND) - 150);
    // The voice heard last is the second one (nearer its tone than the first's).
    const last = heard.segments.at(-1)?.dominantHz ?? 0;
    expect(Math.abs(last - toneOf(w, 'Bella'))).toBeLessThan(Math.abs(last - toneOf(w, 'Adam')));
  });
});

describe('bounded queues', () => {
  it('refuses past the member’s queue bound with a clear sentence', async () => {
    const w = await open({ env: { QUEUE_MAX_PER_MEMBER: '3' } });
    const replies: string[] = [];
    for (let i = 0; i < 4; i++) {
      replies.push((await w.discord.slash(w.member, 'speak', { text: `Number ${i + 1}.` })).content);
    }
    expect(replies[3]).toBe(
      'You already have 3 messages waiting to be spoken here; send more once some have been said.',
    );
    // Another member still has room.
    expect((await w.discord.slash(w.admin, 'speak', { text: 'Me too.' })).content).toMatch(/Queued/);
    await w.discord.slash(w.member, 'stop');
  });

  it('the member rate limit counts what is queued: 40 × 100 characters against 1,000 a minute', async () => {
    const w = await open({
      env: {
        BUDGET_MEMBER_CHARS_PER_MINUTE: '1000',
        QUEUE_MAX_PER_MEMBER: '100',
        QUEUE_MAX_PER_SERVER: '100',
      },
    });
    const text = 'a'.repeat(99).concat('.');
    let accepted = 0;
    let refused = '';
    for (let i = 0; i < 40; i++) {
      const reply = await w.discord.slash(w.member, 'speak', { text });
      if (/Speaking now|Queued/.test(reply.content)) accepted += 1;
      else refused = reply.content;
    }
    expect(accepted).toBe(10);
    expect(refused).toMatch(/faster than the 1,000 characters a minute/);
    await w.discord.slash(w.member, 'stop');
  });
});

describe('Discord’s three-second deadline', () => {
  // A voice list slower than the deadline (and than Herald's 1.5 s before it defers) by well over a second.
  const VOICE_LIST_MS = 5_000;

  it('/speak answered at once is one reply, not a deferral and an edit', async () => {
    const w = await open();
    const speak = await w.discord.slash(w.member, 'speak', { text: 'Quick.' });
    expect(speak.content).toMatch(/Speaking now/);
    expect(speak.deferred).toBe(false);
    await w.discord.slash(w.member, 'stop');
  });

  it('/speak and /voice-set answer (deferred) while the voice list takes 5 s to load', async () => {
    const w = await open();
    w.tts.inject({ kind: 'delay-headers', ms: VOICE_LIST_MS }, { route: 'speakers', times: 2 });
    await w.restart(); // a cold voice list
    const speak = await w.discord.slash(w.member, 'speak', { text: 'Patience.' }, { timeoutMs: 30_000 });
    expect(speak.deferred).toBe(true);
    expect(speak.content).toMatch(/Speaking now/);
    const set = await w.discord.slash(w.admin, 'voice-set', { speaker: 'Bella', scope: 'me' });
    expect(set.content).toMatch(/Your voice in this server is now Bella/);
  });

  it('/voice-set answers (deferred) while a cold voice list takes 5 s to load', async () => {
    const w = await open();
    w.tts.inject({ kind: 'delay-headers', ms: VOICE_LIST_MS }, { route: 'speakers', times: 2 });
    await w.restart(); // a cold voice list, and /voice-set is the first to need it
    const set = await w.discord.slash(
      w.admin,
      'voice-set',
      { speaker: 'Bella', scope: 'me' },
      { timeoutMs: 30_000 },
    );
    expect(set.deferred).toBe(true);
    expect(set.content).toMatch(/Your voice in this server is now Bella/);
  });
});

describe('the budget guard stops only for money, and comes back by itself', () => {
  it('a 429 "rate limit quota" is a retry-later reply, never a stop', async () => {
    const w = await open();
    w.tts.inject(
      { kind: 'status', status: 429, body: { message: 'rate limit quota exceeded' } },
      { route: 'generate', times: 3 },
    );
    const first = await w.discord.slash(w.member, 'speak', { text: 'Too fast?' });
    const told = await first.untilFollowUp();
    expect(told.content).toMatch(/rate limit|too many|busy/i);
    const next = await w.discord.slash(w.member, 'speak', { text: 'Not stopped.' });
    expect(next.content).toMatch(/Speaking now|Queued/);
    const heard = await w.discord.voice(w.guild).untilSilent({ quietMs: 500 });
    expect(heard.soundMs).toBeGreaterThan(200);
  });

  it('a 402 stops; a top-up resumes by itself within the re-check interval, with no BOT_OWNER_IDS', async () => {
    const w = await open({
      tts: { balanceUsd: 10 },
      env: { BUDGET_FLOOR_USD: '0.50', BUDGET_RECHECK_MINUTES: '0.05' },
    });
    w.tts.balanceUsd = 0.0001;
    const drained = await w.discord.slash(w.member, 'speak', { text: 'Out of money.' });
    expect((await drained.untilFollowUp()).content).toMatch(/out of credit|lack of credit/);
    expect((await w.discord.slash(w.member, 'speak', { text: 'Still?' })).content).toMatch(
      /Herald has stopped speaking/,
    );
    w.tts.balanceUsd = 5; // the operator tops up, and runs nothing
    await vi.waitFor(
      async () =>
        expect((await w.discord.slash(w.member, 'speak', { text: 'Back.' })).content).toMatch(/Speaking now/),
      { timeout: 15_000, interval: 1_000 },
    );
  });

  it('with no BOT_OWNER_IDS, the application’s owner may run /budget recheck and nobody else', async () => {
    const ownerId = '123456789012345678';
    const w = await open({ discord: { applicationOwnerId: ownerId }, env: { BUDGET_RECHECK_MINUTES: '0' } });
    const owner = w.guild.addMember({ name: 'Olive Owner', id: ownerId });
    expect((await w.discord.slash(w.admin, 'budget', {}, { subcommand: 'recheck' })).content).toMatch(
      /Only the bot’s operator/,
    );
    const recheck = await w.discord.slash(owner, 'budget', {}, { subcommand: 'recheck' });
    expect(recheck.content).toMatch(/Herald was not stopped|speaks again/);
  });
});
