import childProcess from 'node:child_process';
import { PassThrough, Readable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import {
  AudioPlayerStatus,
  createAudioPlayer,
  createAudioResource,
  NoSubscriberBehavior,
  StreamType,
} from '@discordjs/voice';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { analyse, decodeOpus } from '../../emulators/support/audio.ts';
import { encodeTone, toneSamples, writeOggOpus } from '../../emulators/tts/ogg.ts';
import { parseOpusPacket } from '../../src/audio/opus-packet.ts';
import { createSpeechResource, setTrailingSilence } from '../../src/audio/resource.ts';
import { chunked } from './helpers.ts';
import { wavFile } from './wav-fixtures.ts';

const SPAWNERS = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;

// Every way Node starts a child process, watched; the FFmpeg probe uses spawnSync, FFmpeg itself spawn.
function watchChildProcesses() {
  return SPAWNERS.map((name) =>
    vi.spyOn(childProcess, name).mockImplementation((() => {
      throw new Error(`child_process.${name} called`);
    }) as never),
  );
}

const spawnCount = (spies: ReturnType<typeof watchChildProcesses>): number =>
  spies.reduce((sum, spy) => sum + spy.mock.calls.length, 0);

async function readAll(stream: Readable): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const packet of stream) out.push(packet as Buffer);
  return out;
}

const oggPackets = encodeTone({ hz: 440, durationMs: 600, frameMs: 20, channels: 1 });
const oggBody = Buffer.concat(
  writeOggOpus({
    packets: oggPackets,
    channels: 1,
    frameSamples: 960,
    continuedPackets: true,
    maxBodyBytes: 100,
  }),
);
const wavBody = wavFile(toneSamples({ hz: 440, durationMs: 600, sampleRate: 24_000, channels: 1 }), {
  sampleRate: 24_000,
  channels: 1,
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('createSpeechResource', () => {
  it('Ogg: the play stream yields the 20 ms Opus packets of the file, with the metadata attached', async () => {
    const spies = watchChildProcesses();
    const resource = createSpeechResource(Readable.from(chunked(oggBody, 333)), {
      format: 'opus',
      metadata: { messageId: '42' },
    });
    expect(resource.metadata).toEqual({ messageId: '42' });
    expect(await readAll(resource.playStream)).toEqual(oggPackets);
    expect(resource.encoder).toBeUndefined();
    expect(spawnCount(spies)).toBe(0);
  });

  // One page at a time, arriving `msApart` after the one before (as the body's ReadAhead would say); returns how
  // many frames the resource held when it could start.
  const framesAtStart = async (msApart: number): Promise<{ before: number; atStart: number }> => {
    const source = new PassThrough();
    const pages = writeOggOpus({ packets: oggPackets, channels: 1, frameSamples: 960 });
    const ends: number[] = [];
    for (const page of pages) ends.push((ends.at(-1) ?? 0) + page.length);
    const resource = createSpeechResource(source, {
      format: 'opus',
      metadata: {},
      arrivedAt: (offset) => 1_000 + ends.findIndex((end) => end > offset) * msApart,
    });
    const [head, tags, ...audio] = pages;
    source.write(head);
    source.write(tags);
    let before = 0;
    for (const page of audio) {
      for (let i = 0; i < 3; i++) await tick();
      // `started` is the player's cue to play.
      if (resource.started) break;
      before = Math.max(before, resource.playStream.readableLength);
      source.write(page);
    }
    await vi.waitFor(() => expect(resource.started).toBe(true));
    const atStart = resource.playStream.readableLength;
    resource.playStream.destroy();
    return { before, atStart };
  };

  it('Ogg: from a service faster than real time the player can start on three frames, not on the first', async () => {
    expect(await framesAtStart(5)).toEqual({ before: 0, atStart: 3 });
  });

  it('Ogg: from a service at real time the player starts on five frames (three would leave it 0–20 ms ahead)', async () => {
    expect(await framesAtStart(20)).toEqual({ before: 0, atStart: 5 });
  });

  it('ends with five frames of silence, or with the pause asked for once the next utterance is ready', async () => {
    const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
    const tail = async (follow?: number): Promise<Buffer[]> => {
      const resource = createSpeechResource(Readable.from([oggBody]), { format: 'opus', metadata: {} });
      if (follow !== undefined) setTrailingSilence(resource, follow);
      const read: Buffer[] = [];
      // As the player does each 20 ms tick: read while the resource says it is readable.
      for (let tick = 0; tick < 200 && !resource.ended; tick++) {
        await new Promise((resolve) => setImmediate(resolve));
        while (resource.readable) {
          const packet = resource.read();
          if (!packet) break;
          read.push(packet);
        }
      }
      return read.slice(oggPackets.length);
    };
    expect(await tail()).toEqual([SILENCE, SILENCE, SILENCE, SILENCE, SILENCE]);
    expect(await tail(0)).toEqual([]);
    expect(await tail(2)).toEqual([SILENCE, SILENCE]);
  });

  it('WAV: the play stream yields 20 ms Opus packets from prism’s encoder, holding the tone', async () => {
    const spies = watchChildProcesses();
    const resource = createSpeechResource(Readable.from(chunked(wavBody, 1000)), {
      format: 'wav',
      metadata: 7,
    });
    const packets = await readAll(resource.playStream);
    expect(resource.encoder).toBeDefined();
    expect(
      new Set(packets.map((p) => parseOpusPacket(p).frameMs * parseOpusPacket(p).frames.length)),
    ).toEqual(new Set([20]));
    expect(packets.length).toBe(30);
    const heard = analyse(decodeOpus(packets, 2));
    expect(heard.segments).toHaveLength(1);
    expect(heard.segments[0]?.dominantHz).toBeCloseTo(440, -1);
    expect(spawnCount(spies)).toBe(0);
  });

  it('an AudioPlayer plays a file of 60 ms packets for its real length (one 20 ms packet per tick)', async () => {
    const packets = encodeTone({ hz: 440, durationMs: 600, frameMs: 60, channels: 1 });
    const body = Buffer.concat(writeOggOpus({ packets, channels: 1, frameSamples: 2880 }));
    const resource = createSpeechResource(Readable.from([body]), { format: 'opus', metadata: null });
    // No voice connection here: "play" makes the player read a packet every 20 ms tick all the same.
    const player = createAudioPlayer({ behaviors: { noSubscriber: NoSubscriberBehavior.Play } });
    const idle = new Promise<void>((resolve) => player.once(AudioPlayerStatus.Idle, () => resolve()));
    player.play(resource);
    await idle;
    // Each 60 ms packet must last three ticks; unsplit, it would count as one (20 ms).
    expect(resource.playbackDuration).toBe(packets.length * 60);
  });

  it('the spy is real: @discordjs/voice’s own createAudioResource probes for FFmpeg with a child process', () => {
    const spies = watchChildProcesses();
    createAudioResource(new PassThrough(), { inputType: StreamType.Opus });
    expect(spawnCount(spies)).toBeGreaterThan(0);
  });

  it.each(['opus', 'wav'] as const)('%s: an error on the input ends the resource', async (format) => {
    const input = new PassThrough();
    const resource = createSpeechResource(input, { format, metadata: null });
    const failed = new Promise<Error>((resolve) => resource.playStream.once('error', resolve));
    input.write(format === 'opus' ? oggBody.subarray(0, 500) : wavBody.subarray(0, 5000));
    input.destroy(new Error('TTS body timed out'));
    expect((await failed).message).toBe('TTS body timed out');
    expect(resource.ended).toBe(true);
  });

  it.each(['opus', 'wav'] as const)(
    '%s: destroying the play stream (a skip) releases the input',
    async (format) => {
      const input = new PassThrough();
      const resource = createSpeechResource(input, { format, metadata: null });
      resource.playStream.on('error', () => {});
      const closed = new Promise<void>((resolve) => input.once('close', resolve));
      input.write(format === 'opus' ? oggBody.subarray(0, 500) : wavBody.subarray(0, 5000));
      resource.playStream.destroy();
      await closed;
      expect(input.destroyed).toBe(true);
    },
  );

  it('a corrupt body ends the resource with a readable error', async () => {
    const resource = createSpeechResource(Readable.from([Buffer.from('{"error":"quota"}')]), {
      format: 'opus',
      metadata: null,
    });
    const failed = new Promise<Error>((resolve) => resource.playStream.once('error', resolve));
    expect(await failed).toMatchObject({ code: 'ERR_NOT_OGG' });
    expect(resource.ended).toBe(true);
  });

  it('an unknown format is refused before playing, and the input is released', () => {
    const input = new PassThrough();
    expect(() => createSpeechResource(input, { format: 'mp3' as never, metadata: null })).toThrow(
      expect.objectContaining({ code: 'ERR_UNKNOWN_FORMAT', message: expect.stringMatching(/"mp3"/) }),
    );
    expect(input.destroyed).toBe(true);
  });
});
