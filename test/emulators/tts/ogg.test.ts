import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyse, decodeOpus, packetDurationMs } from '../../../emulators/support/audio.ts';
import { demuxWithPrism, readOggOpus } from '../../../emulators/support/ogg.ts';
import { ENCODER_DELAY, encodeTone, oggCrc, writeOggOpus } from '../../../emulators/tts/ogg.ts';

const packetsOf = (...sizes: number[]): Buffer[] => sizes.map((size, i) => Buffer.alloc(size, i + 1));

describe('oggCrc', () => {
  it.each([
    // Reference values of the Ogg CRC-32 (poly 0x04c11db7, init 0, unreflected, no final xor).
    ['', 0x00000000],
    ['123456789', 0x89a1897f], // the CRC-32/POSIX check value before its final xor
  ])('crc(%j) = %i', (text, crc) => {
    expect(oggCrc(Buffer.from(text, 'latin1'))).toBe(crc);
  });
});

describe('writeOggOpus', () => {
  it('writes OpusHead (BOS), OpusTags, then audio pages ending with EOS, all readable', () => {
    const packets = packetsOf(100, 120, 130);
    const pages = writeOggOpus({ packets, channels: 2, frameSamples: 960, serial: 7 });
    const read = readOggOpus(Buffer.concat(pages));
    expect(read.head).toEqual({ channels: 2, preSkip: 312, inputSampleRate: 24_000 });
    expect(read.packets).toEqual(packets);
    expect(read.pages.map((p) => [p.bos, p.eos])).toEqual([
      [true, false],
      [false, false],
      [false, false],
      [false, false],
      [false, true],
    ]);
    expect(read.pages.map((p) => p.granule)).toEqual([0n, 0n, 960n, 1920n, 2880n]);
    expect(pages.every((page) => page.readUInt32LE(14) === 7)).toBe(true);
  });

  it('puts packetsPerPage packets on each page and honours preSkip, inputSampleRate and sampleCount', () => {
    const packets = packetsOf(10, 20, 30, 40, 50);
    const pages = writeOggOpus({
      packets,
      channels: 1,
      frameSamples: 2880,
      packetsPerPage: 2,
      preSkip: 100,
      inputSampleRate: 48_000,
      sampleCount: 10_000,
    });
    const read = readOggOpus(Buffer.concat(pages));
    expect(read.head).toEqual({ channels: 1, preSkip: 100, inputSampleRate: 48_000 });
    expect(read.pages.slice(2).map((p) => p.lacing)).toEqual([[10, 20], [30, 40], [50]]);
    // The last granule trims the padding of the final packet: preSkip + real samples (RFC 7845 §4.4).
    expect(read.pages.slice(2).map((p) => p.granule)).toEqual([5760n, 11_520n, 10_100n]);
  });

  it.each([
    [255, [255, 0]],
    [510, [255, 255, 0]],
    [300, [255, 45]],
    [0, [0]],
  ])('laces a %i-byte packet as %j', (size, lacing) => {
    const pages = writeOggOpus({ packets: packetsOf(size), channels: 1, frameSamples: 960 });
    const read = readOggOpus(Buffer.concat(pages));
    expect(read.pages[2]?.lacing).toEqual(lacing);
    expect(read.packets[0]?.length).toBe(size);
  });

  it('splits packets across pages like a real muxer when continuedPackets is set', () => {
    const packets = packetsOf(320, 320, 320, 320, 960, 2000, 100);
    const pages = writeOggOpus({ packets, channels: 1, frameSamples: 960, continuedPackets: true });
    const read = readOggOpus(Buffer.concat(pages));
    expect(read.packets).toEqual(packets);
    const audio = read.pages.slice(2);
    expect(audio.some((p) => p.continued)).toBe(true);
    for (const [i, page] of audio.entries()) {
      expect(page.bodyBytes).toBeLessThanOrEqual(600);
      // A continued page always follows one whose lacing ends in 255, and only then.
      const previous = i === 0 ? undefined : audio[i - 1];
      expect(page.continued).toBe(previous?.lacing.at(-1) === 255);
    }
    // The 2000-byte packet spans pages on which no packet ends: those carry granule -1.
    expect(audio.some((p) => p.granule === -1n)).toBe(true);
  });

  it('makes a stream that prism-media cannot fully demux once a packet is continued', async () => {
    const packets = packetsOf(100, 320, 320, 320, 320);
    const ogg = Buffer.concat(
      writeOggOpus({ packets, channels: 1, frameSamples: 960, continuedPackets: true }),
    );
    expect(readOggOpus(ogg).packets).toHaveLength(5);
    const prismPackets = await demuxWithPrism(ogg, { chunkBytes: 64 });
    expect(prismPackets.length).toBeLessThan(5);
    const plain = Buffer.concat(writeOggOpus({ packets, channels: 1, frameSamples: 960 }));
    expect(await demuxWithPrism(plain, { chunkBytes: 64 })).toEqual(packets);
  });
});

describe('writeOggOpus round trip (property)', () => {
  it('readOggOpus gets back every packet, whatever the sizes and paging', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 40 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 2000 }),
        fc.integer({ min: 1, max: 8 }),
        (sizes, continuedPackets, maxBodyBytes, packetsPerPage) => {
          const packets = packetsOf(...sizes);
          const pages = writeOggOpus({
            packets,
            channels: 1,
            frameSamples: 960,
            continuedPackets,
            maxBodyBytes,
            packetsPerPage,
          });
          const read = readOggOpus(Buffer.concat(pages));
          expect(read.packets).toEqual(packets);
          expect(read.pages.at(-1)?.eos).toBe(true);
          expect(read.pages.filter((p) => p.eos)).toHaveLength(1);
          // Granules never go backwards; the last one counts every packet.
          const granules = read.pages.map((p) => p.granule).filter((g) => g >= 0n);
          for (let i = 1; i < granules.length; i++)
            expect(granules[i]).toBeGreaterThanOrEqual(granules[i - 1] ?? 0n);
          expect(read.pages.at(-1)?.granule).toBe(BigInt(sizes.length * 960));
          if (!continuedPackets) expect(read.pages.some((p) => p.continued)).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('readOggOpus', () => {
  const stream = (): Buffer =>
    Buffer.concat(writeOggOpus({ packets: packetsOf(50, 60), channels: 1, frameSamples: 960 }));

  it('rejects a page whose CRC does not match', () => {
    const ogg = stream();
    const last = ogg.length - 1;
    ogg[last] = (ogg[last] ?? 0) ^ 0xff;
    expect(() => readOggOpus(ogg)).toThrow(/CRC/);
  });

  it.each([
    ['truncated', (b: Buffer) => b.subarray(0, b.length - 5), /truncated/],
    ['not Ogg', (b: Buffer) => Buffer.concat([Buffer.from('RIFF'), b]), /OggS/],
    ['missing the first page', (b: Buffer) => b.subarray(47), /sequence/],
  ])('rejects a stream that is %s', (_name, mangle, error) => {
    expect(() => readOggOpus(mangle(stream()))).toThrow(error);
  });
});

describe('encodeTone', () => {
  it.each([
    [20, 1],
    [40, 1],
    [60, 1],
    [20, 2],
    [40, 2],
    [60, 2],
  ] as const)(
    '%i ms frames, %i channel(s): packets of that duration decode to the tone',
    (frameMs, channels) => {
      const packets = encodeTone({ hz: 440, durationMs: 500, frameMs, channels });
      expect(packets.every((p) => packetDurationMs(p) === frameMs)).toBe(true);
      // Enough packets to carry the tone plus the encoder's lookahead.
      expect(packets.length).toBe(Math.ceil((500 * 48 + ENCODER_DELAY) / (48 * frameMs)));
      const { segments } = analyse(decodeOpus(packets, channels));
      expect(segments).toHaveLength(1);
      expect(segments[0]?.durationMs).toBeCloseTo(500, -1);
      expect(segments[0]?.dominantHz).toBeCloseTo(440, 0);
    },
  );

  it('makes constant-size packets over 255 bytes when given a high bitrate', () => {
    const packets = encodeTone({ hz: 330, durationMs: 200, frameMs: 20, channels: 1, bitrate: 128_000 });
    expect(new Set(packets.map((p) => p.length))).toEqual(new Set([320]));
  });

  it('scales with amplitude', () => {
    const peak = (amplitude: number): number =>
      Math.max(
        ...decodeOpus(encodeTone({ hz: 440, durationMs: 200, frameMs: 20, channels: 1, amplitude })).map(
          Math.abs,
        ),
      );
    expect(peak(0.6)).toBeGreaterThan(peak(0.3) * 1.7);
    expect(peak(0.3)).toBeGreaterThan(0.25 * 32767);
    expect(peak(0.3)).toBeLessThan(0.36 * 32767);
  });
});
