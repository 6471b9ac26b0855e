/** WAV files for tests, written field by field so each test can bend one field. */

/** Options of {@link wavFile}. */
export interface WavFileOptions {
  sampleRate: number;
  channels: number;
  /** Format tag in fmt; default 1 (PCM). 0xFFFE writes WAVE_FORMAT_EXTENSIBLE with a PCM sub-format. */
  formatTag?: number;
  /** Bits per sample written in fmt; default 16. */
  bits?: number;
  /** The data chunk's size field; default the real size. 0 and 0xFFFFFFFF mean "streamed". */
  dataSize?: number;
  /** Chunks put between fmt and data, e.g. LIST. */
  before?: { id: string; body: Buffer }[];
  /** Bytes after the data chunk (a trailing chunk). */
  after?: Buffer;
}

function chunk(id: string, body: Buffer, size = body.length): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, 'latin1');
  header.writeUInt32LE(size, 4);
  // RIFF pads odd-sized chunks to an even length.
  return Buffer.concat([header, body, Buffer.alloc(body.length % 2)]);
}

/** A RIFF/WAVE file holding interleaved s16 `samples`. */
export function wavFile(samples: Int16Array, o: WavFileOptions): Buffer {
  const tag = o.formatTag ?? 1;
  const bits = o.bits ?? 16;
  const fmt = Buffer.alloc(tag === 0xfffe ? 40 : 16);
  fmt.writeUInt16LE(tag, 0);
  fmt.writeUInt16LE(o.channels, 2);
  fmt.writeUInt32LE(o.sampleRate, 4);
  fmt.writeUInt32LE((o.sampleRate * o.channels * bits) / 8, 8);
  fmt.writeUInt16LE((o.channels * bits) / 8, 12);
  fmt.writeUInt16LE(bits, 14);
  if (tag === 0xfffe) {
    fmt.writeUInt16LE(22, 16);
    fmt.writeUInt16LE(bits, 18);
    // KSDATAFORMAT_SUBTYPE_PCM starts with the PCM tag, 1.
    fmt.writeUInt16LE(1, 24);
  }
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const body = Buffer.concat([
    Buffer.from('WAVE', 'latin1'),
    chunk('fmt ', fmt),
    ...(o.before ?? []).map((c) => chunk(c.id, c.body)),
    chunk('data', data, o.dataSize ?? data.length),
    o.after ?? Buffer.alloc(0),
  ]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}
