import { PassThrough } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { analyse, decodeOpus } from '../../emulators/support/audio.ts';
import { demuxWithPrism, readOggOpus } from '../../emulators/support/ogg.ts';
import { encodeTone, oggCrc, writeOggOpus } from '../../emulators/tts/ogg.ts';
import { createOggOpusPacketizer } from '../../src/audio/ogg-opus.ts';
import { parseOpusPacket } from '../../src/audio/opus-packet.ts';
import { ReadAhead } from '../../src/audio/read-ahead.ts';
import { captureLogger, chunked, encodeFrames, randomChunks, runTransform } from './helpers.ts';

const bytes = (...values: number[]): Buffer => Buffer.from(values);
const filled = (length: number, value: number): number[] => new Array<number>(length).fill(value);
const toc = (config: number, code: number, stereo = false): number => (config << 3) | (stereo ? 4 : 0) | code;

const oggFile = (o: Parameters<typeof writeOggOpus>[0]): Buffer => Buffer.concat(writeOggOpus(o));

const packetize = (data: Buffer | Buffer[], logger = captureLogger().logger): Promise<Buffer[]> =>
  runTransform<Buffer>(createOggOpusPacketizer({ logger }), Array.isArray(data) ? data : [data]);

// The packetizer's own account of the paths it took, from its final debug line.
async function packetizeWithStats(data: Buffer | Buffer[]) {
  const { logger, lines } = captureLogger();
  const packets = await packetize(data, logger);
  const done = lines.find((line) => line.msg === 'ogg opus done');
  return { packets, stats: done as { passthrough: number; split: number; reencoded: number } };
}

const durations = (packets: Buffer[]): Set<string> =>
  new Set(packets.map((p) => `${parseOpusPacket(p).frames.length}x${parseOpusPacket(p).frameMs}`));

describe('createOggOpusPacketizer: 20 ms passthrough', () => {
  it.each([
    ['mono, one packet per page', 1, 1],
    ['mono, 10 packets per page', 1, 10],
    ['stereo, 4 packets per page', 2, 4],
  ] as const)('%s: packets come out byte-identical to the Ogg packets', async (_name, channels, perPage) => {
    const packets = encodeTone({ hz: 440, durationMs: 1000, frameMs: 20, channels });
    const file = oggFile({ packets, channels, frameSamples: 960, packetsPerPage: perPage });
    const { packets: out, stats } = await packetizeWithStats(file);
    expect(out).toEqual(readOggOpus(file).packets);
    expect(out).toEqual(packets);
    expect(stats).toMatchObject({ passthrough: packets.length, split: 0, reencoded: 0 });
  });

  it('emits packets while the input is still arriving', async () => {
    const file = oggFile({
      packets: encodeTone({ hz: 440, durationMs: 400, frameMs: 20, channels: 1 }),
      channels: 1,
      frameSamples: 960,
    });
    const packetizer = createOggOpusPacketizer();
    const first = new Promise<Buffer>((resolve) => packetizer.once('data', resolve));
    // Only the first half of the file; the input stays open.
    packetizer.write(file.subarray(0, file.length / 2));
    expect((await first).length).toBeGreaterThan(0);
    packetizer.destroy();
  });
});

describe('createOggOpusPacketizer: demuxes at the pace of its reader', () => {
  // As Herald plays a download (src/voice/queue.ts): TTS body → ReadAhead → packetizer, read one packet per frame.
  // Five seconds of a tone: about 39 KB, less than a Transform's default write buffer.
  const packets = encodeTone({ hz: 440, durationMs: 5_000, frameMs: 20, channels: 1 });
  const file = oggFile({ packets, channels: 1, frameSamples: 960 });

  it('leaves a download that arrived whole, then ended, waiting upstream rather than demuxing it at once', async () => {
    const source = new PassThrough();
    const ahead = new ReadAhead(source, { limitBytes: 8 * 1024 });
    const packetizer = createOggOpusPacketizer();
    ahead.pipe(packetizer);
    // A service faster than real time: all five seconds arrive while the player has taken a few packets.
    for (const chunk of chunked(file, 600)) source.write(chunk);
    await tick();
    const played: Buffer[] = [];
    for (let i = 0; i < 5; i++) played.push(packetizer.read() as Buffer);
    // The response ends. Node's Transform demuxes everything still in its write buffer once its input has ended:
    // with a 64 KiB write buffer, that was the whole rest of the utterance in one call.
    source.end();
    for (let i = 0; i < 5; i++) await tick();
    // The player takes its next packets, one a frame.
    for (let i = 0; i < 10; i++) {
      played.push(packetizer.read() as Buffer);
      await tick();
    }
    expect(packetizer.readableLength).toBeLessThanOrEqual(32);

    // Played to the end at the reader's pace, every packet still comes out, in order.
    for (;;) {
      const packet = packetizer.read() as Buffer | null;
      if (packet) {
        played.push(packet);
        continue;
      }
      if (packetizer.readableEnded) break;
      await Promise.race([
        new Promise((resolve) => packetizer.once('readable', resolve)),
        new Promise((resolve) => packetizer.once('end', resolve)),
      ]);
    }
    expect(played).toEqual(packets);
  });
});

describe('createOggOpusPacketizer: startFrames', () => {
  // A service sending at real time: one 20 ms page at a time, the reader waiting for the first packet.
  const packets = encodeTone({ hz: 440, durationMs: 200, frameMs: 20, channels: 1 });
  const [head, tags, ...audio] = writeOggOpus({ packets, channels: 1, frameSamples: 960 });

  it('holds the first packets until that many are ready, then passes each on as it comes', () => {
    const packetizer = createOggOpusPacketizer({ startFrames: 3 });
    const waiting: number[] = [];
    for (const page of [head, tags, ...audio.slice(0, 4)]) {
      packetizer.write(page);
      waiting.push(packetizer.readableLength);
    }
    // Head, tags, then two packets held; the third releases all three; the fourth follows alone.
    expect(waiting).toEqual([0, 0, 0, 0, 3, 4]);
    expect([packetizer.read(), packetizer.read(), packetizer.read(), packetizer.read()]).toEqual(
      packets.slice(0, 4),
    );
  });

  // The packet count waiting after each audio page, with the clock moved `msPerPage` before each page arrives.
  const waitingAt = (msPerPage: number): number[] => {
    let clock = 1_000;
    const packetizer = createOggOpusPacketizer({ startFrames: 3, slowStartFrames: 5, now: () => clock });
    packetizer.write(head);
    packetizer.write(tags);
    return audio.slice(0, 6).map((page) => {
      clock += msPerPage;
      packetizer.write(page);
      return packetizer.readableLength;
    });
  };

  it('holds slowStartFrames when the first packets came slower than twice real time', () => {
    // At real time the third packet comes 40 ms after the first: the player would start 0–20 ms ahead of the service.
    expect(waitingAt(20)).toEqual([0, 0, 0, 0, 5, 6]);
    expect(waitingAt(11)).toEqual([0, 0, 0, 0, 5, 6]);
  });

  it('releases startFrames at once when they came at twice real time or faster', () => {
    expect(waitingAt(10)).toEqual([0, 0, 3, 4, 5, 6]);
    expect(waitingAt(5)).toEqual([0, 0, 3, 4, 5, 6]);
  });

  it('holds slowStartFrames when the packets all came at once: how fast they came is not known', () => {
    expect(waitingAt(0)).toEqual([0, 0, 0, 0, 5, 6]);
  });

  it('gives a stream shorter than that everything it holds when the input ends', async () => {
    const short = writeOggOpus({ packets: packets.slice(0, 2), channels: 1, frameSamples: 960 });
    const out = await runTransform<Buffer>(createOggOpusPacketizer({ startFrames: 3 }), short);
    expect(out).toEqual(packets.slice(0, 2));
  });

  it('passes the first packet on at once by default', () => {
    const packetizer = createOggOpusPacketizer();
    for (const page of [head, tags, audio[0]]) packetizer.write(page);
    expect(packetizer.readableLength).toBe(1);
  });
});

describe('createOggOpusPacketizer: durationMs, from a service slower than real time', () => {
  // Two seconds of audio, one 20 ms page at a time.
  const packets = encodeTone({ hz: 440, durationMs: 2_000, frameMs: 20, channels: 1 });
  const [head, tags, ...audio] = writeOggOpus({ packets, channels: 1, frameSamples: 960 });

  // Pages arriving every `msPerPage`: how many had arrived when the first packets were let go.
  const releasedAfter = (msPerPage: number, durationMs?: number): number => {
    let clock = 1_000;
    const packetizer = createOggOpusPacketizer({
      startFrames: 3,
      slowStartFrames: 5,
      now: () => clock,
      ...(durationMs === undefined ? {} : { durationMs }),
    });
    packetizer.write(head);
    packetizer.write(tags);
    for (const [index, page] of audio.entries()) {
      if (index > 0) clock += msPerPage;
      packetizer.write(page);
      if (packetizer.readableLength > 0) return index + 1;
    }
    return audio.length;
  };

  // A player started on the released packets sends the first at once and reads each later one a 20 ms cycle before
  // it sends it: the packets that had not arrived by then, each a frame of silence inside the words.
  const starvedFrames = (msPerPage: number, durationMs?: number): number => {
    const held = releasedAfter(msPerPage, durationMs);
    const startedAt = (held - 1) * msPerPage;
    return audio.filter((_page, index) => index * msPerPage > startedAt + Math.max(0, index - 1) * 20).length;
  };

  it.each([
    ['half real time', 40],
    ['three quarters of real time', 80 / 3],
    ['four fifths of real time', 25],
  ])('at %s, holds until the rest arrives before it is due: no frame of silence', (_name, msPerPage) => {
    expect(starvedFrames(msPerPage, 2_000)).toBe(0);
    // Without the announced length the player runs dry, again and again.
    expect(starvedFrames(msPerPage)).toBeGreaterThan(5);
  });

  it('takes nine tenths of real time for real time in its first five pages, as it must a page read late', () => {
    // Each page 2.2 ms later than the one before: the fifth 8.9 ms late, within a late read of one at real time.
    expect(releasedAfter(200 / 9, 2_000)).toBe(5);
  });

  it('holds no longer than that: at half real time, half the audio (less 20 ms) and the usual five', () => {
    expect(releasedAfter(40, 2_000)).toBe(54);
  });

  it('holds a service at real time or faster no longer than without it', () => {
    for (const msPerPage of [20, 10, 5]) {
      expect(releasedAfter(msPerPage, 2_000)).toBe(releasedAfter(msPerPage));
    }
    expect(releasedAfter(20, 2_000)).toBe(5);
    expect(releasedAfter(5, 2_000)).toBe(3);
  });

  // Pages that arrived `msPerPage` apart (the headers with the first), written to the packetizer only when the
  // player starts, `backlog` of them at once, then each as it arrives: how many had arrived when it let go.
  const afterBacklog = (msPerPage: number, backlog: number, timed: boolean): number => {
    const pages = [head, tags, ...audio] as Buffer[];
    const ends: number[] = [];
    for (const page of pages) ends.push((ends.at(-1) ?? 0) + page.length);
    const arrival = (index: number): number => 1_000 + Math.max(0, index - 2) * msPerPage;
    let clock = arrival(backlog + 1);
    const packetizer = createOggOpusPacketizer({
      startFrames: 3,
      slowStartFrames: 5,
      durationMs: 2_000,
      now: () => clock,
      ...(timed ? { arrivedAt: (offset: number) => arrival(ends.findIndex((end) => end > offset)) } : {}),
    });
    packetizer.write(Buffer.concat(pages.slice(0, backlog + 2)));
    let arrived = backlog;
    while (packetizer.readableLength === 0 && arrived < audio.length) {
      clock = arrival(arrived + 2);
      packetizer.write(audio[arrived++] as Buffer);
    }
    return arrived;
  };

  it('judges a backlog demuxed at once by when its pages arrived, not as a fast service', () => {
    // At half real time: 2 s × 0.5 less 20 ms = 49 frames behind, and the usual five.
    expect(afterBacklog(40, 4, true)).toBe(54);
    // At real time, ten pages in hand are enough at once; untimed, they wait for the next page to show the pace.
    expect(afterBacklog(20, 10, true)).toBe(10);
    expect(afterBacklog(20, 10, false)).toBe(11);
  });

  it('lets a short stream go when it ends, however slowly it came', async () => {
    const short = writeOggOpus({ packets: packets.slice(0, 8), channels: 1, frameSamples: 960 });
    const out = await runTransform<Buffer>(
      createOggOpusPacketizer({ startFrames: 3, slowStartFrames: 5, durationMs: 60_000 }),
      short,
    );
    expect(out).toEqual(packets.slice(0, 8));
  });
});

describe('createOggOpusPacketizer: a player that ran dry inside the audio', () => {
  // Ten seconds of audio, one 20 ms page at a time.
  const packets = encodeTone({ hz: 440, durationMs: 10_000, frameMs: 20, channels: 1 });
  const [head, tags, ...audio] = writeOggOpus({ packets, channels: 1, frameSamples: 960 });

  /**
   * Pages arriving at `arrival(index)` (ms), a player reading one packet each 20 ms from when the first came out,
   * on a simulated clock: the runs of reads that found nothing before the last packet (gaps heard), and their reads.
   */
  const heard = async (
    arrival: (index: number) => number,
    options: { maxRebufferFrames?: number } = {},
  ): Promise<{ gaps: number; silent: number; played: Buffer[] }> => {
    let clock = 0;
    const packetizer = createOggOpusPacketizer({
      startFrames: 3,
      slowStartFrames: 5,
      durationMs: 10_000,
      now: () => clock,
      ...options,
    });
    packetizer.write(head);
    packetizer.write(tags);
    const played: Buffer[] = [];
    let written = 0;
    let startedAt: number | undefined;
    let gaps = 0;
    let silent = 0;
    let dry = false;
    for (; played.length < audio.length && clock < 60_000; clock++) {
      while (written < audio.length && arrival(written) <= clock) {
        packetizer.write(audio[written] as Buffer);
        written++;
        if (written === audio.length) {
          packetizer.end();
          await tick();
        }
      }
      startedAt ??= packetizer.readableLength > 0 ? clock : undefined;
      if (startedAt === undefined || (clock - startedAt) % 20 !== 0) continue;
      const packet = packetizer.read() as Buffer | null;
      if (packet === null) {
        if (!dry) gaps++;
        silent++;
        dry = true;
      } else {
        played.push(packet);
        dry = false;
      }
    }
    return { gaps, silent, played };
  };

  it('at nine tenths of real time, taken for real time at the start, pauses once near the end and plays on', async () => {
    const ninth = (index: number): number => (index * 200) / 9;
    const once = await heard(ninth);
    expect(once.played).toEqual(packets);
    expect(once.gaps).toBe(1);
    // Never held again: a frame of silence every ten or so.
    const scattered = await heard(ninth, { maxRebufferFrames: 0 });
    expect(scattered.played).toEqual(packets);
    expect(scattered.gaps).toBeGreaterThan(20);
    console.log(
      `0.9 × real time, 10 s: ${once.gaps} gap of ${once.silent} frames; without: ${scattered.gaps} gaps`,
    );
  });

  it('after a stall, goes on at once when the rest comes at four times real time', async () => {
    // Half the pages at four times real time (5 s of audio in 1.25 s), a 5 s stall, the rest at four times again.
    const result = await heard((index) => index * 5 + (index >= 250 ? 5_000 : 0));
    expect(result.played).toEqual(packets);
    expect(result.gaps).toBe(1);
    // The player, started at 10 ms, ran dry at about 5.01 s; the rest began to arrive at 6.25 s and went on on its
    // third packet, 10 ms later: about 63 frames of silence, none more for holding the rest.
    expect(result.silent).toBeGreaterThanOrEqual(60);
    expect(result.silent).toBeLessThanOrEqual(64);
  });
});

describe('createOggOpusPacketizer: packets continued across pages', () => {
  // 128 kbit/s CBR makes 320-byte packets; pages capped at 600 bytes split them across pages.
  const packets = encodeTone({ hz: 440, durationMs: 1000, frameMs: 20, channels: 2, bitrate: 128_000 });
  const file = oggFile({ packets, channels: 2, frameSamples: 960, continuedPackets: true });

  it('the fixture really continues packets, and prism-media loses them', async () => {
    const pages = readOggOpus(file).pages;
    expect(pages.filter((p) => p.continued).length).toBeGreaterThan(10);
    const prismPackets = await demuxWithPrism(file, { timeoutMs: 2000 });
    console.log(`prism OggDemuxer: ${prismPackets.length} of ${packets.length} packets`);
    expect(prismPackets.length).toBeLessThan(packets.length);
  });

  it.each([
    ['1-byte chunks', chunked(file, 1)],
    ['7-byte chunks', chunked(file, 7)],
    ['the whole file at once', [file]],
    ['random chunk sizes (seed 1)', randomChunks(file, 1)],
    ['random chunk sizes (seed 42)', randomChunks(file, 42, 2000)],
  ])('reassembles them from %s', async (_name, chunks) => {
    const out = await packetize(chunks);
    expect(out).toEqual(readOggOpus(file).packets);
    expect(out).toEqual(packets);
  });
});

describe('createOggOpusPacketizer: packets that are not one 20 ms frame', () => {
  it.each([40, 60] as const)(
    '%i ms CELT packets (code 2/3) are split losslessly into 20 ms frames',
    async (frameMs) => {
      const packets = encodeTone({ hz: 440, durationMs: 1000, frameMs, channels: 1 });
      expect(parseOpusPacket(packets[3] ?? Buffer.alloc(0)).frames.length).toBe(frameMs / 20);
      const file = oggFile({ packets, channels: 1, frameSamples: 48 * frameMs });
      const { packets: out, stats } = await packetizeWithStats(file);

      expect(durations(out)).toEqual(new Set(['1x20']));
      expect(out.length).toBe((packets.length * frameMs) / 20);
      expect(stats).toMatchObject({ passthrough: 0, split: out.length, reencoded: 0 });
      // Without re-encoding the decoder hears exactly the same audio.
      expect(decodeOpus(out)).toEqual(decodeOpus(packets));
      const heard = analyse(decodeOpus(out));
      expect(heard.segments).toHaveLength(1);
      expect(heard.segments[0]?.dominantHz).toBeCloseTo(440, -1);
    },
  );

  it.each([
    ['SILK 40 ms (config 2)', 40, true],
    ['SILK 60 ms (config 3)', 60, true],
    ['SILK 10 ms (config 0)', 10, true],
    ['CELT 10 ms (config 30)', 10, false],
  ] as const)('%s frames are decoded and re-encoded at 20 ms', async (_name, frameMs, voip) => {
    const hz = 300;
    const packets = encodeFrames({ hz, durationMs: 1000, frameMs, voip });
    expect(parseOpusPacket(packets[3] ?? Buffer.alloc(0)).frameMs).toBe(frameMs);
    const file = oggFile({ packets, channels: 1, frameSamples: 48 * frameMs });
    const { packets: out, stats } = await packetizeWithStats(file);

    expect(durations(out)).toEqual(new Set(['1x20']));
    expect(stats).toMatchObject({ passthrough: 0, split: 0, reencoded: out.length });
    const inputMs = packets.length * frameMs;
    // Pre-skip (312 samples) dropped, encoder lookahead (312) added, tail padded to a whole 20 ms.
    expect(out.length).toBe(Math.ceil(inputMs / 20));
    const heard = analyse(decodeOpus(out));
    const original = analyse(decodeOpus(packets));
    console.log(
      `${_name}: ${packets.length} packets → ${out.length}; sound ${heard.soundMs} ms (input decodes to ${original.soundMs} ms)`,
    );
    expect(heard.segments).toHaveLength(1);
    expect(heard.segments[0]?.dominantHz).toBeGreaterThan(hz * 0.97);
    expect(heard.segments[0]?.dominantHz).toBeLessThan(hz * 1.03);
    expect(Math.abs(heard.soundMs - original.soundMs)).toBeLessThan(25);
  });

  it('a stream mixing 20 ms and 60 ms packets stays in order and whole', async () => {
    const silk20 = encodeFrames({ hz: 300, durationMs: 400, frameMs: 20, voip: true });
    const silk60 = encodeFrames({ hz: 300, durationMs: 400, frameMs: 60, voip: true });
    const packets = [...silk20, ...silk60, ...silk20];
    const file = oggFile({ packets, channels: 1, frameSamples: 960 });
    const { packets: out, stats } = await packetizeWithStats(file);
    expect(durations(out)).toEqual(new Set(['1x20']));
    expect(out.slice(0, silk20.length)).toEqual(silk20);
    expect(stats.passthrough + stats.reencoded).toBe(out.length);
    expect(out.length).toBe(Math.ceil((silk20.length * 2 * 20 + silk60.length * 60) / 20));
  });
});

describe('createOggOpusPacketizer: several logical streams', () => {
  const first = encodeTone({ hz: 440, durationMs: 200, frameMs: 20, channels: 1 });
  const second = encodeTone({ hz: 660, durationMs: 200, frameMs: 20, channels: 2 });

  it('chained streams (one file after another) play one after the other', async () => {
    const file = Buffer.concat([
      oggFile({ packets: first, channels: 1, frameSamples: 960, serial: 1 }),
      oggFile({ packets: second, channels: 2, frameSamples: 960, serial: 2 }),
    ]);
    expect(await packetize(chunked(file, 100))).toEqual([...first, ...second]);
  });

  it('a multiplexed non-Opus stream is ignored', async () => {
    const other = writeOggOpus({ packets: second, channels: 2, frameSamples: 960, serial: 7 });
    const bos = other[0] ?? Buffer.alloc(0);
    // Make it look like another codec, with a valid CRC.
    bos.write('\x80theora!', 28, 'latin1');
    bos.writeUInt32LE(0, 22);
    bos.writeUInt32LE(oggCrc(bos), 22);
    const opusPages = writeOggOpus({ packets: first, channels: 1, frameSamples: 960, serial: 8 });
    // RFC 3533 §4: all beginning-of-stream pages come first, then pages of the streams interleave.
    const interleaved: Buffer[] = [bos, opusPages[0] ?? Buffer.alloc(0)];
    for (let i = 1; i < Math.max(other.length, opusPages.length); i++) {
      for (const pages of [other, opusPages])
        if (pages[i] !== undefined) interleaved.push(pages[i] as Buffer);
    }
    expect(await packetize(Buffer.concat(interleaved))).toEqual(first);
  });
});

describe('createOggOpusPacketizer: errors', () => {
  const packets = encodeTone({ hz: 440, durationMs: 200, frameMs: 20, channels: 1 });
  const pages = writeOggOpus({ packets, channels: 1, frameSamples: 960 });
  const file = Buffer.concat(pages);

  const withPage = (index: number, change: (page: Buffer) => void, fixCrc: boolean): Buffer => {
    const copy = pages.map((p) => Buffer.from(p));
    const page = copy[index] ?? Buffer.alloc(0);
    change(page);
    if (fixCrc) {
      page.writeUInt32LE(0, 22);
      page.writeUInt32LE(oggCrc(page), 22);
    }
    return Buffer.concat(copy);
  };

  it.each([
    [
      'a WAV file',
      Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'),
      'ERR_NOT_OGG',
      /Not an Ogg stream.*RIFF/,
    ],
    ['an HTML error page', Buffer.from('<html>502 Bad Gateway</html>'), 'ERR_NOT_OGG', /<html/],
    [
      'a flipped byte in an audio page',
      withPage(4, (p) => p.writeUInt8((p[40] ?? 0) ^ 0xff, 40), false),
      'ERR_OGG_CRC',
      /bad CRC/,
    ],
    [
      'Vorbis instead of Opus',
      withPage(0, (p) => p.write('\x01vorbis!', 28, 'latin1'), true),
      'ERR_NOT_OPUS',
      /does not hold Opus.*first packet starts "\\x01vorbis!"/,
    ],
    [
      'a 6-channel OpusHead',
      withPage(0, (p) => p.writeUInt8(6, 28 + 9), true),
      'ERR_UNSUPPORTED_OPUS',
      /6 channels/,
    ],
    ['a file cut inside a page', file.subarray(0, file.length - 10), 'ERR_TRUNCATED', /inside a page/],
    ['a file cut after OpusHead', pages[0] ?? Buffer.alloc(0), 'ERR_TRUNCATED', /OpusTags/],
    [
      'a missing page',
      Buffer.concat([...pages.slice(0, 3), ...pages.slice(4)]),
      'ERR_OGG_CORRUPT',
      /expected page 3/,
    ],
    ['an empty body', Buffer.alloc(0), 'ERR_NOT_OPUS', /no OpusHead/],
    // The capture pattern's first byte, with the page's CRC made right: only the pattern can tell.
    [
      'a first page starting "xggS"',
      withPage(0, (p) => p.write('x', 0, 'latin1'), true),
      'ERR_NOT_OGG',
      /"OggS"/,
    ],
    [
      'a page starting "XggS"',
      withPage(3, (p) => p.write('X', 0, 'latin1'), true),
      'ERR_OGG_CORRUPT',
      /page sync/,
    ],
  ])('%s is a readable error', async (_name, data, code, message) => {
    const failure = packetize(chunked(data, 5));
    await expect(failure).rejects.toThrow(message);
    await expect(failure).rejects.toMatchObject({ name: 'AudioFormatError', code });
  });

  it('a malformed Opus packet in the stream is an error', async () => {
    const bad = oggFile({
      packets: [...packets.slice(0, 2), bytes(toc(31, 3), 0x00)],
      channels: 1,
      frameSamples: 960,
    });
    await expect(packetize(bad)).rejects.toMatchObject({ code: 'ERR_BAD_OPUS_PACKET' });
  });

  it('a single 20 ms frame over 1275 bytes in the stream is an error', async () => {
    const bad = oggFile({
      packets: [...packets.slice(0, 2), bytes(toc(31, 0), ...filled(1276, 1))],
      channels: 1,
      frameSamples: 960,
    });
    await expect(packetize(bad)).rejects.toMatchObject({ code: 'ERR_BAD_OPUS_PACKET', message: /1275/ });
  });

  it('fails as soon as the first bytes are wrong, without waiting for the end', async () => {
    const packetizer = createOggOpusPacketizer();
    const failed = new Promise<Error>((resolve) => packetizer.once('error', resolve));
    const input = new PassThrough();
    input.pipe(packetizer);
    input.write(Buffer.from('<!DOCTYPE html>'));
    expect(await failed).toMatchObject({ code: 'ERR_NOT_OGG' });
    input.destroy();
  });
});
