import { PassThrough, type Readable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { encodeTone, writeOggOpus } from '../../emulators/tts/ogg.ts';
import { createOggOpusPacketizer } from '../../src/audio/ogg-opus.ts';
import { readOggOpusPackets } from '../../src/audio/packet-stream.ts';
import { ReadAhead } from '../../src/audio/read-ahead.ts';
import { chunked, encodeFrames, randomChunks, runTransform } from './helpers.ts';

// readOggOpusPackets is what plays: TTS body → ReadAhead → readOggOpusPackets → the player (src/audio/resource.ts).
// It must give exactly the packets the tested Transform gives, fail as that pipeline failed, and read no further
// ahead of its reader.

const oggFile = (o: Parameters<typeof writeOggOpus>[0]): Buffer => Buffer.concat(writeOggOpus(o));

/** A download arriving in `chunks` behind a ReadAhead, as the queue sets it up; the source is returned too. */
function download(chunks: readonly Buffer[], end = true): { source: PassThrough; ahead: ReadAhead } {
  const source = new PassThrough();
  const ahead = new ReadAhead(source, { limitBytes: 8 * 1024 });
  for (const chunk of chunks) source.write(chunk);
  if (end) source.end();
  return { source, ahead };
}

/** Reads `packets` to its end, one packet per turn of the event loop (as a player would); rejects with its error. */
async function readAll(packets: Readable): Promise<Buffer[]> {
  const out: Buffer[] = [];
  const failed = new Promise<never>((_, reject) => packets.once('error', reject));
  failed.catch(() => {});
  for (;;) {
    const packet = packets.read() as Buffer | null;
    if (packet) {
      out.push(packet);
      await tick();
      continue;
    }
    if (packets.readableEnded) return out;
    await Promise.race([
      failed,
      new Promise((resolve) => packets.once('readable', resolve)),
      new Promise((resolve) => packets.once('end', resolve)),
    ]);
  }
}

describe('readOggOpusPackets', () => {
  const tone = encodeTone({ hz: 440, durationMs: 2_000, frameMs: 20, channels: 2 });

  it.each([
    [
      'stereo 20 ms, 4 packets a page',
      oggFile({ packets: tone, channels: 2, frameSamples: 960, packetsPerPage: 4 }),
    ],
    [
      'mono 60 ms CELT (split into 20 ms)',
      oggFile({
        packets: encodeTone({ hz: 440, durationMs: 1_000, frameMs: 60, channels: 1 }),
        channels: 1,
        frameSamples: 48 * 60,
      }),
    ],
    [
      'SILK 40 ms (re-encoded at 20 ms)',
      oggFile({
        packets: encodeFrames({ hz: 300, durationMs: 600, frameMs: 40, voip: true }),
        channels: 1,
        frameSamples: 48 * 40,
      }),
    ],
    [
      'two chained streams',
      Buffer.concat([
        oggFile({ packets: tone.slice(0, 20), channels: 2, frameSamples: 960, serial: 1 }),
        oggFile({ packets: tone.slice(20, 40), channels: 2, frameSamples: 960, serial: 2 }),
      ]),
    ],
  ])('%s: the same packets as the packetizer Transform, whatever the chunking', async (_name, file) => {
    const expected = await runTransform<Buffer>(createOggOpusPacketizer(), [file]);
    expect(expected.length).toBeGreaterThan(10);
    for (const chunks of [[file], chunked(file, 7), randomChunks(file, 42)]) {
      const { ahead } = download(chunks);
      expect(await readAll(readOggOpusPackets(ahead))).toEqual(expected);
    }
  });

  it('holds the first startFrames packets until that many are ready', async () => {
    const pages = writeOggOpus({ packets: tone.slice(0, 10), channels: 2, frameSamples: 960 });
    // Header pages, then one audio page (one packet) at a time, the input left open.
    const { source, ahead } = download(pages.slice(0, 3), false);
    const packets = readOggOpusPackets(ahead, { startFrames: 3 });
    packets.read(0);
    await tick();
    expect(packets.readableLength).toBe(0);
    source.write(pages[3]);
    await tick();
    expect(packets.readableLength).toBe(0);
    source.write(pages[4]);
    await tick();
    expect(packets.readableLength).toBe(3);
    expect([packets.read(), packets.read(), packets.read()]).toEqual(tone.slice(0, 3));
    packets.destroy();
  });

  it('leaves a download that arrived whole waiting upstream, and demuxes at the pace of its reader', async () => {
    const file = oggFile({
      packets: encodeTone({ hz: 440, durationMs: 5_000, frameMs: 20, channels: 1 }),
      channels: 1,
      frameSamples: 960,
    });
    const { source, ahead } = download(chunked(file, 600));
    const packets = readOggOpusPackets(ahead);
    await tick();
    for (let i = 0; i < 10; i++) {
      packets.read();
      await tick();
    }
    expect(packets.readableLength).toBeLessThanOrEqual(32);
    // Most of five seconds still waits upstream (the read-ahead, the paused download), not in demuxed packets.
    expect(ahead.held + source.readableLength).toBeGreaterThan(file.length / 2);
    packets.destroy();
  });

  it('fails with the error of bytes that are not Ogg Opus, as soon as they arrive', async () => {
    const { ahead } = download([Buffer.from('<html>502 Bad Gateway</html>')], false);
    const packets = readOggOpusPackets(ahead);
    await expect(readAll(packets)).rejects.toMatchObject({ name: 'AudioFormatError', code: 'ERR_NOT_OGG' });
    expect(packets.destroyed).toBe(true);
  });

  it('fails when the input ends inside a page', async () => {
    const file = oggFile({ packets: tone.slice(0, 10), channels: 2, frameSamples: 960 });
    const { ahead } = download([file.subarray(0, file.length - 10)]);
    await expect(readAll(readOggOpusPackets(ahead))).rejects.toMatchObject({ code: 'ERR_TRUNCATED' });
  });

  it('fails with the error of its source (a download cut off), after the packets before it', async () => {
    const file = oggFile({ packets: tone.slice(0, 50), channels: 2, frameSamples: 960 });
    const { source, ahead } = download([file.subarray(0, file.length / 2)], false);
    const packets = readOggOpusPackets(ahead);
    const read: Buffer[] = [];
    const failure = new Promise<Error>((resolve) => packets.once('error', resolve));
    for (let i = 0; i < 5; i++) {
      await tick();
      read.push(packets.read() as Buffer);
    }
    expect(read).toEqual(tone.slice(0, 5));
    source.destroy(new Error('socket reset'));
    expect((await failure).message).toBe('socket reset');
  });

  it('fails when its source closes before its end, and is not left waiting', async () => {
    const { ahead } = download([], false);
    const packets = readOggOpusPackets(ahead);
    const failure = new Promise<Error>((resolve) => packets.once('error', resolve));
    packets.read(0);
    ahead.destroy();
    expect(await failure).toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
  });

  it('destroys its source when it is destroyed (a skip), which leaves the download paused', async () => {
    const file = oggFile({ packets: tone, channels: 2, frameSamples: 960 });
    const { source, ahead } = download([file], false);
    const packets = readOggOpusPackets(ahead);
    packets.read(0);
    await tick();
    packets.destroy();
    await tick();
    expect(ahead.destroyed).toBe(true);
    expect(source.isPaused()).toBe(true);
  });
});
