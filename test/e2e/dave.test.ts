import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  Channel,
  DiscordEmulator,
  Guild,
  Heard,
  Member,
  VoiceCapture,
} from '../../emulators/discord/index.ts';
import { createWorld, type World } from './harness.ts';

// DAVE end to end: what members in the channel decrypt of what Herald sends, as the group changes and breaks.

/** Resolves once `check()` holds, re-checked every 20 ms. @throws after `timeoutMs`. */
async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every member present heard every frame of the burst, end-to-end encrypted. */
function expectAllDecrypted(heard: Heard, listeners: readonly Member[]): void {
  const { hearing } = heard;
  expect(hearing.sent).toBeGreaterThan(0);
  expect(hearing.e2ee).toBe(hearing.sent);
  for (const member of listeners) {
    expect(hearing.listeners[member.id], member.name).toEqual({ decrypted: hearing.sent, failed: {} });
  }
}

describe('DAVE with members in the channel', () => {
  let world: World;
  beforeAll(async () => {
    world = await createWorld();
  });
  afterAll(async () => {
    await world.close();
  });

  it('cold join with members already in the channel, 20 runs: no frame without E2EE, none undecryptable', async () => {
    const { discord, guild, member, admin } = world;
    const capture = discord.voice(guild);
    const totals = { sent: 0, e2ee: 0, plainUnderDave: 0, undecryptable: 0 };
    for (let run = 0; run < 20; run += 1) {
      capture.clear();
      await discord.slash(member, 'speak', { text: `Run ${run}.` });
      const { hearing } = await capture.untilSilent({ quietMs: 300 });
      totals.sent += hearing.sent;
      totals.e2ee += hearing.e2ee;
      totals.plainUnderDave += hearing.plainUnderDave;
      for (const who of [admin, member]) {
        const heard = hearing.listeners[who.id];
        totals.undecryptable += hearing.sent - (heard?.decrypted ?? 0);
      }
      await discord.slash(member, 'leave');
      await capture.untilDisconnected();
    }
    console.log(
      `cold joins under DAVE, 20 runs: frames sent ${totals.sent}, E2EE ${totals.e2ee}, ` +
        `non-silence frames without E2EE ${totals.plainUnderDave}, frames a present listener could not decrypt ${totals.undecryptable}`,
    );
    expect(totals.plainUnderDave).toBe(0);
    expect(totals.undecryptable).toBe(0);
    expect(totals.e2ee).toBe(totals.sent);
  });

  it('a member joining mid-utterance: those there lose no frame, the newcomer hears all but 2 after its welcome', async () => {
    const { discord, guild, lounge, member, admin } = world;
    const capture = discord.voice(guild);
    capture.clear();
    await discord.slash(member, 'speak', {
      text: 'A longer sentence, so that someone can join while it plays.',
    });
    await capture.untilFrames(15);
    const newcomer = guild.addMember({ name: 'Cy Newcomer' });
    guild.joinVoice(newcomer, lounge);
    const heard = await capture.untilSilent();
    const welcomedAt = discord.daveListener(guild, newcomer)?.welcomedAt();
    if (welcomedAt === undefined) throw new Error('the newcomer was never welcomed into the group');
    const afterWelcome = capture.frames.filter((f) => !f.silence && f.receivedAt >= welcomedAt);
    const missed = afterWelcome.filter((f) => !f.listeners.get(newcomer.id)?.ok).length;
    console.log(
      `mid-utterance join: ${afterWelcome.length} frames after the newcomer's welcome, it missed ${missed}`,
    );
    expectAllDecrypted(heard, [admin, member]);
    expect(afterWelcome.length).toBeGreaterThan(10);
    expect(missed).toBeLessThanOrEqual(2);
    guild.leaveVoice(newcomer);
  });

  it('everyone leaves, someone returns, /speak: end-to-end encrypted and decrypted again', async () => {
    const { discord, guild, lounge, member, admin } = world;
    const capture = discord.voice(guild);
    await discord.slash(member, 'speak', { text: 'Before everyone leaves.' });
    expectAllDecrypted(await capture.untilSilent({ quietMs: 300 }), [admin, member]);
    guild.leaveVoice(admin);
    guild.leaveVoice(member);
    await capture.untilDisconnected();
    guild.joinVoice(member, lounge);
    capture.clear();
    await discord.slash(member, 'speak', { text: 'Back again.' });
    expectAllDecrypted(await capture.untilSilent({ quietMs: 300 }), [member]);
    guild.joinVoice(admin, lounge);
  });
});

/** A second server with a member in its voice channel, for faults that must not reach it. */
function secondServer(discord: DiscordEmulator): { guild: Guild; lounge: Channel; member: Member } {
  const guild = discord.createGuild({ name: 'Second Server' });
  guild.addTextChannel('general');
  const lounge = guild.addVoiceChannel('Lounge');
  const member = guild.addMember({ name: 'Dee Elsewhere' });
  guild.joinVoice(member, lounge);
  return { guild, lounge, member };
}

describe('DAVE faults: the process stays up, the other server speaks, the next utterance is heard', () => {
  let world: World;
  let other: { guild: Guild; lounge: Channel; member: Member };
  beforeAll(async () => {
    world = await createWorld();
    other = secondServer(world.discord);
    // Herald in voice in both servers, DAVE groups established.
    await bothSpeak();
  });
  afterAll(async () => {
    await world.close();
  });

  /** Both servers speak at once; both are heard, end-to-end encrypted, by everyone present. */
  async function bothSpeak(): Promise<void> {
    const { discord, guild, member, admin } = world;
    const captures: VoiceCapture[] = [discord.voice(guild), discord.voice(other.guild)];
    for (const capture of captures) capture.clear();
    await Promise.all([
      discord.slash(member, 'speak', { text: 'After the fault.' }),
      discord.slash(other.member, 'speak', { text: 'Meanwhile, elsewhere.' }),
    ]);
    const [here, there] = await Promise.all(captures.map((c) => c.untilSilent({ quietMs: 300 })));
    if (!here || !there) throw new Error('a capture is missing');
    expectAllDecrypted(here, [admin, member]);
    expectAllDecrypted(there, [other.member]);
    expect(world.herald().client.isReady()).toBe(true);
  }

  /** Injects a fault the library answers with op 31 and a new key package; waits until the group is whole again. */
  async function injectAndRecover(inject: (guild: Guild) => void): Promise<void> {
    const { discord, guild } = world;
    const before = discord.daveGroup(guild)?.stats.invalidations ?? 0;
    inject(guild);
    await until('the group to re-form after the fault', () => {
      const group = discord.daveGroup(guild);
      return group !== undefined && group.stats.invalidations > before && group.settled();
    });
  }

  it('a proposal for a user never announced (no op 11)', async () => {
    await injectAndRecover((guild) => world.discord.faults.dave.proposeUnknownUser(guild));
    await bothSpeak();
  });

  it('a malformed commit', async () => {
    await injectAndRecover((guild) => world.discord.faults.dave.malformedCommit(guild));
    await bothSpeak();
  });

  it('a malformed welcome', async () => {
    await injectAndRecover((guild) => world.discord.faults.dave.malformedWelcome(guild));
    await bothSpeak();
  });

  it('an invalid transition (executed without being prepared; prepared and never executed)', async () => {
    world.discord.faults.dave.invalidTransition(world.guild);
    await bothSpeak();
  });

  it('a key package the gateway rejects', async () => {
    const { discord, guild, member } = world;
    await discord.slash(member, 'leave');
    await discord.voice(guild).untilDisconnected();
    discord.faults.dave.rejectNextKeyPackage(guild);
    await bothSpeak();
    expect(discord.daveGroup(guild)?.stats.rejectedKeyPackages).toBe(1);
  });
});

describe('DAVE declined by Discord', () => {
  let world: World;
  beforeAll(async () => {
    world = await createWorld({ discord: { dave: false } });
  });
  afterAll(async () => {
    await world.close();
  });

  it('Herald still speaks, under transport encryption only', async () => {
    const { discord, guild, member, admin } = world;
    await discord.slash(member, 'speak', { text: 'No end-to-end encryption here.' });
    const heard = await discord.voice(guild).untilSilent();
    expect(heard.hearing.sent).toBeGreaterThan(0);
    expect(heard.hearing.e2ee).toBe(0);
    expect(heard.frames).toHaveLength(heard.hearing.sent);
    for (const who of [admin, member]) {
      expect(heard.hearing.listeners[who.id]).toEqual({ decrypted: heard.hearing.sent, failed: {} });
    }
    expect(discord.daveGroup(guild)).toBeUndefined();
  });
});
