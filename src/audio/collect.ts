import type { Readable } from 'node:stream';

/**
 * A whole audio stream in memory, for what must be sent as one file (a voice message, a preview). A stream longer
 * than `maxBytes` is destroyed with `tooLong` as its error's message: a misbehaving service never fills the memory.
 */
export function collectBounded(stream: Readable, maxBytes: number, tooLong: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) stream.destroy(new Error(tooLong));
      else chunks.push(chunk);
    });
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
