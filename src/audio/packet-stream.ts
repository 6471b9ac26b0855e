import { finished, Readable } from 'node:stream';
import { asBuffer, asError, createOggOpusDemuxer, type OggOpusPacketizerOptions } from './ogg-opus.ts';
import { rebufferWhenDry } from './start-hold.ts';

/**
 * The Opus packets of an Ogg Opus byte stream, read as they are taken (object mode; each exactly 20 ms, as
 * {@link createOggOpusPacketizer} makes them). The same packets as `source` piped into that Transform, without the
 * pipe and the Transform's writable side between them: a read that finds too few packets takes one chunk from
 * `source` (a ReadAhead hands out at most 1 KiB) and demuxes it; nothing is read ahead of the reader but what
 * `source` holds. An error of `source`, its end before its bytes did, or an error in its bytes destroys this stream
 * with that error; destroying this stream destroys `source`.
 */
export function readOggOpusPackets(source: Readable, options: OggOpusPacketizerOptions = {}): Readable {
  const demuxer = createOggOpusDemuxer(options);
  // The reader asked for packets and has not been given any since.
  let wanted = false;
  let sourceEnded = false;

  const pump = (): void => {
    if (!wanted || packets.destroyed) return;
    try {
      for (;;) {
        const chunk = source.read() as Buffer | Uint8Array | null;
        if (chunk === null) {
          if (!sourceEnded) {
            const before = packets.readableLength;
            demuxer.caughtUp(packets);
            if (packets.readableLength > before) wanted = false;
            return;
          }
          wanted = false;
          demuxer.end(packets);
          packets.push(null);
          return;
        }
        const before = packets.readableLength;
        demuxer.write(asBuffer(chunk), packets);
        // Held back (the first frames wait for each other) or not a whole packet yet: take the next chunk.
        if (packets.readableLength > before) {
          wanted = false;
          return;
        }
      }
    } catch (error) {
      packets.destroy(asError(error));
    }
  };

  const packets: Readable = new Readable({
    objectMode: true,
    read() {
      wanted = true;
      pump();
    },
    destroy(error, callback) {
      stopWatching();
      source.off('readable', pump);
      source.destroy();
      callback(error);
    },
  });

  // The player ran dry inside the audio: the next packets are held until it can play on (src/audio/start-hold.ts).
  rebufferWhenDry(packets, demuxer);
  source.on('readable', pump);
  const stopWatching = finished(source, { writable: false }, (error) => {
    if (error) {
      packets.destroy(error);
      return;
    }
    sourceEnded = true;
    pump();
  });
  return packets;
}
