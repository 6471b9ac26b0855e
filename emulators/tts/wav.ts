/** WAV writing for the emulator's variant form: RIFF/WAVE, PCM s16le, with the data size known up front. */

/** The 44-byte canonical RIFF/WAVE header for `dataBytes` of PCM s16le. */
export function wavHeader(o: { sampleRate: number; channels: number; dataBytes: number }): Buffer {
  const header = Buffer.alloc(44);
  const blockAlign = o.channels * 2;
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + o.dataBytes, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(o.channels, 22);
  header.writeUInt32LE(o.sampleRate, 24);
  header.writeUInt32LE(o.sampleRate * blockAlign, 28);
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(o.dataBytes, 40);
  return header;
}

/** Little-endian bytes of interleaved s16 samples. */
export function pcmBytes(samples: Int16Array): Buffer {
  const out = Buffer.alloc(samples.length * 2);
  for (const [i, value] of samples.entries()) out.writeInt16LE(value, i * 2);
  return out;
}
