import { PermissionFlagsBits } from 'discord.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { silenceInsideWords } from '../../emulators/discord/index.ts';
import { DEFAULT_SPEAKERS, expectedDurationMs, manySpeakers } from '../../emulators/tts/index.ts';
import { createWorld, type World } from './harness.ts';

// Herald's core, end to end: the unmodified discord.js bot against the Discord emulator, speech from the TTS
// emulator, what was played decoded and measured on the emulator's side.

const [bella, adam, nova] = DEFAULT_SPEAKERS as [
  (typeof DEFAULT_SPEAKERS)[0],
  (typeof DEFAULT_SPEAKERS)[0],
  (typeof DEFAULT_SPEAKERS)[0],
];
/** Pitch estimates are within a few percent for pure tones. */
const near = (hz: number) => expect.closeTo(hz, -Math.log10(hz * 0.06));

let world: World;
beforeAll(async () => {
  world = await createWorld();
});
afterAll(async () => {
  await world?.close();
});
beforeEach(async () => {
  // Each test starts with Herald out of voice and a clean capture.
  if (world.guild.botVoiceChannelId() !== null) {
    await world.discord.slash(world.admin, 'leave');
    await world.discord.voice(world.guild).untilDisconnected();
  }
  world.discord.voice(world.guild).clear();
});

describe('/speak', () => {
  it('joins the caller’s channel and plays the first listed voice, full length, at the right speed', async () => {
    const text = 'Hello there, this is Herald speaking.';
    const reply = await world.discord.slash(world.member, 'speak', { text });
    expect(reply.ephemeral).toBe(true);
    expect(reply.content).toMatch(`Speaking now as Bella · ${text.length} characters`);
    expect(reply.allowedMentions).toEqual({ parse: [] });

    const heard = await world.discord.voice(world.guild).untilSilent();
    expect(world.guild.botVoiceChannelId()).toBe(world.lounge.id);
    expect(heard.segments).toHaveLength(1);
    expect(heard.segments[0]?.dominantHz).toEqual(near(bella.toneHz));
    // Full length at the right speed: as long as the service said, give or take a frame or two of fade.
    expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(text) - 60);
    expect(heard.soundMs).toBeLessThan(expectedDurationMs(text) + 60);
    expect(heard.intervals.meanMs).toBeGreaterThan(18);
    expect(heard.intervals.meanMs).toBeLessThan(23);
    console.log(
      `speak: ${heard.frames.length} frames, ${heard.soundMs.toFixed(0)} ms of sound, pacing mean ${heard.intervals.meanMs.toFixed(2)} ms, p99 ${heard.intervals.p99Ms.toFixed(2)} ms`,
    );
  });

  it('speaks with the speaker option, by name in any case, over every stored choice', async () => {
    await world.discord.slash(world.member, 'speak', { text: 'Override please.', speaker: 'nOvA' });
    const heard = await world.discord.voice(world.guild).untilSilent();
    expect(heard.segments[0]?.dominantHz).toEqual(near(nova.toneHz));
  });

  it('plays three requests in order, back to back, and prints the gaps between them', async () => {
    const voices = [adam, bella, nova];
    for (const [i, speaker] of voices.entries()) {
      const reply = await world.discord.slash(world.member, 'speak', {
        text: `Message ${i + 1}.`,
        speaker: speaker.name,
      });
      if (i > 0) expect(reply.content).toMatch(/Queued at position|Speaking now/);
    }
    const heard = await world.discord.voice(world.guild).untilSilent({ quietMs: 800 });
    // The voices in order. A pause in arrival inside one utterance (a loaded machine not scheduling Herald for
    // 60 ms) renders as two segments of the same tone: that is one utterance heard, not a fourth.
    const tones = heard.segments
      .map((segment) => segment.dominantHz)
      .filter((hz, i, all) => i === 0 || Math.abs(hz - (all[i - 1] as number)) > 5);
    expect(tones).toEqual(voices.map((s) => near(s.toneHz)));
    console.log(
      `gaps between queued utterances: ${heard.gapsMs.map((gap) => `${gap.toFixed(0)} ms`).join(', ')}`,
    );
  });

  it('puts exactly the configured pause between queued utterances, as silence frames', async () => {
    const paused = await createWorld({ env: { UTTERANCE_PAUSE_MS: '400' } });
    try {
      for (const text of ['One, then a pause.', 'Two, after it.']) {
        await paused.discord.slash(paused.member, 'speak', { text });
      }
      await paused.discord.voice(paused.guild).untilSilent({ quietMs: 800 });
      // Runs of silence frames between sound: 400 ms is 19 frames plus the player's one tick. At the very end, at
      // least the 5 that mark a stop (the padding is chosen before anyone knows whether more will follow).
      const runs: number[] = [];
      let run = 0;
      for (const frame of paused.discord.voice(paused.guild).frames) {
        if (frame.silence) run += 1;
        else if (run > 0) {
          runs.push(run);
          run = 0;
        }
      }
      expect(runs).toEqual([19]);
      expect(run).toBeGreaterThanOrEqual(5);
    } finally {
      await paused.close();
    }
  });

  it('speaks all the same when its answer comes after Discord forgot the interaction, and logs one warning', async () => {
    // Discord forgets an interaction not answered within its window; here the window is 1 ms, so every answer is
    // late, as in a process too busy to get to it in time.
    const late = await createWorld({ discord: { interactionResponseMs: 1 } });
    try {
      await expect(late.discord.slash(late.member, 'speak', { text: 'Late, but heard.' })).rejects.toThrow(
        /did not respond/,
      );
      const heard = await late.discord.voice(late.guild).untilSilent();
      expect(heard.segments).toHaveLength(1);
      const callbacks = late.discord.rest.filter((call) =>
        /\/interactions\/\d+\/[^/]+\/callback/.test(call.path),
      );
      // The answer alone: no error message sent after it through an interaction Discord no longer knows.
      expect(callbacks).toHaveLength(1);
      const lines = late.logs.map(
        (line) => JSON.parse(line) as { level: string; msg: string; command?: string },
      );
      expect(
        lines.filter((line) => line.msg === 'an interaction expired before Herald could answer it'),
      ).toEqual([expect.objectContaining({ level: 'warn', command: 'speak' })]);
      expect(lines.filter((line) => line.level === 'error')).toEqual([]);
    } finally {
      await late.close();
    }
  });

  it('refuses when the caller is not in voice, the text is empty or over the limit', async () => {
    const stranger = world.guild.addMember({ name: 'Cleo Elsewhere' });
    expect((await world.discord.slash(stranger, 'speak', { text: 'hi' })).content).toMatch(
      /Join a voice channel first/,
    );
    expect((await world.discord.slash(world.member, 'speak', { text: '   \n ' })).content).toMatch(
      /text is empty/,
    );
    const huge = 'a'.repeat(30_001);
    expect((await world.discord.slash(world.member, 'speak', { text: huge })).content).toMatch(
      /30,001 characters; the limit is 30,000/,
    );
    expect(world.guild.botVoiceChannelId()).toBeNull();
    expect(
      world.tts.requests.filter(
        (r) => r.path.endsWith('/generate') && r.body && (r.body as { text?: string }).text === huge,
      ),
    ).toHaveLength(0);
  });

  it('names the permission it lacks, and refuses a full channel', async () => {
    const muted = world.guild.addVoiceChannel('No Speaking', {
      deny: { botPermissions: PermissionFlagsBits.Speak },
    });
    const hidden = world.guild.addVoiceChannel('Hidden', {
      deny: { botPermissions: PermissionFlagsBits.Connect },
    });
    const full = world.guild.addVoiceChannel('Full', { userLimit: 1 });
    const visitor = world.guild.addMember({ name: 'Dee Visitor' });

    world.guild.joinVoice(visitor, muted);
    expect((await world.discord.slash(visitor, 'speak', { text: 'hi' })).content).toMatch(
      /missing the Speak permission/,
    );
    world.guild.joinVoice(visitor, hidden);
    expect((await world.discord.slash(visitor, 'speak', { text: 'hi' })).content).toMatch(
      /missing the Connect permission/,
    );
    world.guild.joinVoice(visitor, full);
    expect((await world.discord.slash(visitor, 'speak', { text: 'hi' })).content).toMatch(/channel is full/);
    world.guild.leaveVoice(visitor);
    expect(world.guild.botVoiceChannelId()).toBeNull();
  });

  it('does not hop to another channel of the server', async () => {
    const other = world.guild.addVoiceChannel('Other Room');
    const wanderer = world.guild.addMember({ name: 'Eve Wanderer' });
    world.guild.joinVoice(wanderer, other);
    await world.discord.slash(world.member, 'join');
    await world.discord.voice(world.guild).untilConnected();
    const reply = await world.discord.slash(wanderer, 'speak', { text: 'over here' });
    expect(reply.content).toMatch(new RegExp(`already speaking in <#${world.lounge.id}>`));
    expect(world.guild.botVoiceChannelId()).toBe(world.lounge.id);
    world.guild.leaveVoice(wanderer);
  });
});

describe('/skip, /stop, /leave', () => {
  it('/skip ends only the current utterance; the next one plays', async () => {
    const long = 'x'.repeat(150);
    await world.discord.slash(world.member, 'speak', { text: long, speaker: adam.name });
    await world.discord.slash(world.member, 'speak', { text: 'Next one.', speaker: nova.name });
    const capture = world.discord.voice(world.guild);
    await capture.untilFrames(10);
    expect((await world.discord.slash(world.member, 'skip')).content).toBe('Skipped.');
    // By the time the reply arrives the player has stopped Adam: what was captured so far is all of him.
    const adamFrames = capture.frames.length;
    capture.clear();
    const after = await capture.untilSilent();
    expect(adamFrames * 20).toBeLessThan(expectedDurationMs(long) / 2);
    const last = after.segments.at(-1);
    expect(last?.dominantHz).toEqual(near(nova.toneHz));
    expect(last?.durationMs).toBeGreaterThan(expectedDurationMs('Next one.') - 60);
  });

  it('/stop clears the queue; /leave leaves the channel', async () => {
    await world.discord.slash(world.member, 'speak', { text: 'y'.repeat(120), speaker: adam.name });
    await world.discord.slash(world.member, 'speak', { text: 'never heard', speaker: nova.name });
    await world.discord.voice(world.guild).untilFrames(5);
    expect((await world.discord.slash(world.member, 'stop')).content).toBe('Stopped; 2 messages cleared.');
    const heard = await world.discord.voice(world.guild).untilSilent();
    expect(heard.segments.map((s) => s.dominantHz)).toEqual([near(adam.toneHz)]);
    // /stop cuts the voice playing too: well short of the whole of it.
    expect(heard.soundMs).toBeLessThan(expectedDurationMs('y'.repeat(120)) / 2);
    expect(world.guild.botVoiceChannelId()).toBe(world.lounge.id);

    expect((await world.discord.slash(world.member, 'leave')).content).toBe('Left the voice channel.');
    await world.discord.voice(world.guild).untilDisconnected();
    expect(world.guild.botVoiceChannelId()).toBeNull();
    expect((await world.discord.slash(world.member, 'leave')).content).toBe('I am not in a voice channel.');
  });
});

describe('/voices and /voice-set', () => {
  it('lists every speaker, with languages and the server default marked', async () => {
    const reply = await world.discord.slash(world.member, 'voices');
    const description = reply.embeds[0]?.description as string;
    for (const speaker of DEFAULT_SPEAKERS) expect(description).toContain(`**${speaker.name}**`);
    expect(description).toMatch(/languages: all/);
    expect(reply.components).toEqual([]);
  });

  it('lets an admin set the server voice, refuses a member, honours scope:me, and keeps it across a restart', async () => {
    const refused = await world.discord.slash(world.member, 'voice-set', { speaker: adam.name });
    expect(refused.content).toMatch(/needs the Manage Server permission/);
    const set = await world.discord.slash(world.admin, 'voice-set', { speaker: adam.name });
    expect(set.content).toBe('The server’s voice is now Adam.');
    const mine = await world.discord.slash(world.admin, 'voice-set', { speaker: nova.id, scope: 'me' });
    expect(mine.content).toBe('Your voice in this server is now Nova.');

    await world.restart();

    await world.discord.slash(world.member, 'speak', { text: 'Server voice.' });
    expect((await world.discord.voice(world.guild).untilSilent()).segments[0]?.dominantHz).toEqual(
      near(adam.toneHz),
    );
    await world.discord.slash(world.admin, 'speak', { text: 'My own voice.' });
    expect((await world.discord.voice(world.guild).untilSilent()).segments[0]?.dominantHz).toEqual(
      near(nova.toneHz),
    );
    const voices = await world.discord.slash(world.admin, 'voices');
    expect(voices.embeds[0]?.description).toMatch(/\*\*Adam\*\* ⭐/);
    expect(voices.embeds[0]?.description).toMatch(/\*\*Nova\*\* 🎙️/);
  });

  it('autocompletes speaker names, prefix matches first', async () => {
    const choices = await world.discord.autocomplete(
      world.member,
      'speak',
      { text: 'x', speaker: 'e' },
      'speaker',
    );
    const names = choices.map((choice) => choice.name.replace(/ \(.*\)$/, ''));
    // "Emma" starts with e; Bella and George contain it; Adam, Nova and Sky do not.
    expect(names).toEqual(['Emma', 'Bella', 'George']);
    expect(choices.every((choice) => DEFAULT_SPEAKERS.some((s) => s.id === choice.value))).toBe(true);
  });
});

describe('audio the simple demuxer cannot play', () => {
  it.each([
    ['60 ms frames', { frameMs: 60 as const }],
    ['40 ms frames', { frameMs: 40 as const }],
    ['packets continued across Ogg pages', { continuedPackets: true }],
    ['stereo', { channels: 2 as const }],
  ])('%s play at the right length and speed', async (_name, audio) => {
    world.tts.configure({ audio: { frameMs: 20, continuedPackets: false, channels: 1, ...audio } });
    try {
      const text = 'Twenty ms or not, this must sound right.';
      await world.discord.slash(world.member, 'speak', { text, speaker: bella.name });
      const heard = await world.discord.voice(world.guild).untilSilent();
      expect(heard.segments).toHaveLength(1);
      expect(heard.segments[0]?.dominantHz).toEqual(near(bella.toneHz));
      expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(text) - 80);
      expect(heard.soundMs).toBeLessThan(expectedDurationMs(text) + 80);
      expect(heard.intervals.meanMs).toBeLessThan(23);
    } finally {
      world.tts.configure({ audio: { frameMs: 20, continuedPackets: false, channels: 1 } });
    }
  });
});

describe('a service slower than real time', () => {
  it('is heard whole after a longer wait, not with frames of silence inside its words', async () => {
    // 0.6 × real time: the 2 s of this sentence take 3.3 s to arrive, so a player started on the first frames
    // would run dry for 0.8 s of it, a frame here and there.
    world.tts.configure({ speed: 0.6 });
    try {
      const capture = world.discord.voice(world.guild);
      const text = 'A slow service must still be heard whole, uncut.';
      await world.discord.slash(world.member, 'speak', { text });
      const heard = await capture.untilSilent({ quietMs: 800 });
      expect(silenceInsideWords(capture.frames).frames).toBe(0);
      expect(heard.segments).toHaveLength(1);
      expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(text) - 60);
      expect(heard.soundMs).toBeLessThan(expectedDurationMs(text) + 60);
    } finally {
      world.tts.configure({ speed: 8 });
    }
  });

  it('is heard whole when its pages come several at a time', async () => {
    // Pages written together every 200 ms (six at a time after the first); the unit tests of start-hold.ts hold the
    // case of several in the first write, which the emulator does not make.
    world.tts.configure({ speed: 0.6, writeEveryMs: 200 });
    try {
      const capture = world.discord.voice(world.guild);
      const text = 'Pages that come together must not stutter.';
      await world.discord.slash(world.member, 'speak', { text });
      await capture.untilSilent({ quietMs: 800 });
      expect(silenceInsideWords(capture.frames).frames).toBe(0);
    } finally {
      world.tts.configure({ speed: 8, writeEveryMs: 0 });
    }
  });
});

describe('a service that slows down inside an utterance', () => {
  it('is heard with one pause, then whole, not with frames of silence scattered through its words', async () => {
    // The first 600 ms at the configured 8 × real time, the rest at half real time: the player, started at once, runs
    // dry about a second in; held again for the rest, it pauses once and plays the rest without a gap.
    world.tts.inject({ kind: 'slow', speed: 0.5, afterMs: 600 });
    const capture = world.discord.voice(world.guild);
    const text = 'A service that slows down halfway must pause once, then go on.';
    await world.discord.slash(world.member, 'speak', { text });
    const heard = await capture.untilSilent({ quietMs: 800 });
    const inside = silenceInsideWords(capture.frames);
    expect(inside.frames).toBeGreaterThan(0);
    expect(inside.gaps).toBe(1);
    expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(text) - 80);
    expect(heard.soundMs).toBeLessThan(expectedDurationMs(text) + 80);
  });
});

describe('the variant form', () => {
  beforeAll(async () => {
    world.tts.configure({ form: 'variant' });
    await world.restart({ TTS_API_FORM: 'variant' });
  });
  afterAll(async () => {
    world.tts.configure({ form: 'current', speed: 8 });
    await world.restart({ TTS_API_FORM: 'current' });
  });

  it('plays WAV through the transcoding path', async () => {
    const text = 'Wave files work too.';
    await world.discord.slash(world.member, 'speak', { text, speaker: adam.name });
    const heard = await world.discord.voice(world.guild).untilSilent();
    expect(heard.segments[0]?.dominantHz).toEqual(near(adam.toneHz));
    expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(text) - 80);
    expect(heard.soundMs).toBeLessThan(expectedDurationMs(text) + 80);
    const sent = world.tts.requests.at(-1)?.body as Record<string, unknown>;
    expect(sent.format).toBe('wav');
    expect(sent).not.toHaveProperty('temperature');
  });

  it('plays WAV from a service slower than real time whole, with no frame of silence inside it', async () => {
    // The emulator sends WAV in 100 ms pieces: at 0.6 × real time, one each 167 ms.
    world.tts.configure({ speed: 0.6 });
    const capture = world.discord.voice(world.guild);
    const text = 'Wave files from a slow service, whole.';
    await world.discord.slash(world.member, 'speak', { text, speaker: adam.name });
    const heard = await capture.untilSilent({ quietMs: 800 });
    expect(silenceInsideWords(capture.frames).frames).toBe(0);
    expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(text) - 80);
    expect(heard.soundMs).toBeLessThan(expectedDurationMs(text) + 80);
  });
});

describe('secrets', () => {
  it('never puts the Discord token or the TTS key in logs, replies or anything sent to Discord', () => {
    const everything = [
      ...world.logs,
      ...world.discord.rest.map((call) => JSON.stringify(call.body ?? null)),
    ].join('\n');
    expect(world.logs.length).toBeGreaterThan(10);
    expect(everything).not.toContain(world.env.DISCORD_TOKEN);
    expect(everything).not.toContain(world.env.TTS_API_KEY);
  });
});

describe('paging', () => {
  it('pages /voices with buttons when the service lists many speakers', async () => {
    world.tts.configure({ speakers: manySpeakers(35) });
    // A restart empties Herald's speaker cache (kept for 5 minutes otherwise).
    await world.restart();
    const reply = await world.discord.slash(world.member, 'voices', { search: 'Speaker' });
    expect(reply.embeds[0]?.footer?.text).toMatch(/Page 1 of 4 · 35 voices/);
    const next = await world.discord.press(world.member, reply.message, 'voices:1:Speaker');
    expect(next.embeds[0]?.footer?.text).toMatch(/Page 2 of 4/);
    expect(next.embeds[0]?.description).toContain('Speaker 0011');
  });
});
