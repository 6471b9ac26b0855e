import { Transform } from 'node:stream';
import opus from '@discordjs/opus';
import { silentLogger } from '../log.ts';
import { AudioFormatError, copyStart, describeBytes } from './errors.ts';
import { createOggPacketReader, type OggPacket } from './ogg-reader.ts';
import { isOne20msFrame, parseOpusPacket } from './opus-packet.ts';
import {
  createStartHold,
  type PacketSink,
  rebufferWhenDry,
  type StartHold,
  type StartHoldOptions,
} from './start-hold.ts';

/** What OpusHead (RFC 7845 §5.1) tells the packetizer. */
interface OpusHead {
  readonly channels: number;
  readonly preSkip: number;
  readonly inputSampleRate: number;
}

function parseOpusHead(packet: Buffer): OpusHead {
  if (packet.length < 19 || !packet.subarray(0, 8).equals(OPUS_HEAD)) {
    throw new AudioFormatError(
      'ERR_NOT_OPUS',
      `Ogg stream does not hold Opus: its first packet starts with ${describeBytes(packet.subarray(0, 8))}`,
    );
  }
  const version = packet.readUInt8(8);
  // RFC 7845 §5.1: the major version is the high nibble; only 0 is defined.
  if (version >> 4 !== 0) throw new AudioFormatError('ERR_UNSUPPORTED_OPUS', `OpusHead version ${version}`);
  const channels = packet.readUInt8(9);
  const family = packet.readUInt8(18);
  if (family !== 0 || channels < 1 || channels > 2) {
    throw new AudioFormatError(
      'ERR_UNSUPPORTED_OPUS',
      `Unsupported Opus channel layout: ${channels} channels, mapping family ${family} (mono or stereo only)`,
    );
  }
  return { channels, preSkip: packet.readUInt16LE(10), inputSampleRate: packet.readUInt32LE(12) };
}

const OPUS_HEAD = Buffer.from('OpusHead', 'latin1');
// @discordjs/opus is CommonJS loading a native addon: Node's ESM loader sees only its default export.
type OpusCodec = InstanceType<typeof opus.OpusEncoder>;
// Discord plays one packet per 20 ms tick at 48 kHz.
const RATE = 48_000;
const FRAME_SAMPLES = 960;
// libopus's encoder delay at 48 kHz (OPUS_GET_LOOKAHEAD, 2.5 ms + 4 ms); @discordjs/opus cannot query it.
const ENCODER_LOOKAHEAD = 312;

/** Options of {@link createOggOpusPacketizer}: when its first packets may go ({@link StartHoldOptions}), and where
 * the stream's layout and the paths taken (passthrough, split, re-encoded) are logged at debug. */
export interface OggOpusPacketizerOptions extends StartHoldOptions {
  /**
   * When the input's byte at `offset` (counted from the start of the stream) arrived, in ms, or undefined when that
   * is not known: the first packets' pace is judged from when their bytes arrived (a ReadAhead's `arrivedAt`).
   * Default: when the packet is demuxed, by `now`.
   */
  readonly arrivedAt?: (offset: number) => number | undefined;
  /** The clock, in ms, when `arrivedAt` is not given or does not know; default `performance.now`. */
  readonly now?: () => number;
}

type Phase = 'head' | 'tags' | 'audio';

/** What the packetizer accepts before its writer must wait: about one piece of a ReadAhead. */
const WRITE_BUFFER_BYTES = 1024;

/**
 * Ogg Opus bytes in (any chunking), Opus packets out to the sink given with each call, each exactly 20 ms, in order:
 * the work behind {@link createOggOpusPacketizer} and {@link readOggOpusPackets}. Both calls throw
 * {@link AudioFormatError}s (a codec failure included).
 */
export interface OggOpusDemuxer {
  /** Demuxes `chunk`, pushing every packet it completes (the first ones wait for {@link caughtUp}). */
  write(chunk: Buffer, sink: PacketSink): void;
  /**
   * Everything received so far has been written: pushes the first packets, held until then, once enough of them
   * have come for the pace they came at (`startFrames`, `slowStartFrames`, `durationMs`).
   */
  caughtUp(sink: PacketSink): void;
  /** The input ended: pushes what is held, and checks that it was a whole Opus stream. */
  end(sink: PacketSink): void;
  /** The reader found no packet `playedMs` into the audio: the next ones are held again ({@link StartHold.ranDry}). */
  ranDry(playedMs: number): void;
}

/** A Transform: Ogg Opus bytes in (any chunking), Opus packets out (object mode), each exactly 20 ms, in order.
 * 20 ms single-frame packets pass byte-identical; multi-frame 20 ms packets are split without re-encoding;
 * other frame durations are decoded and re-encoded at 20 ms. Errors are {@link AudioFormatError}s. */
export function createOggOpusPacketizer(options: OggOpusPacketizerOptions = {}): Transform {
  const demuxer = createOggOpusDemuxer(options);
  const packetizer = new Transform({
    readableObjectMode: true,
    // Bytes wait upstream (a ReadAhead, the socket), not in this stream's write buffer (64 KiB by default): once its
    // input has ended, a Transform transforms everything that buffer holds at once, whatever its reader takes. With
    // the default, a download faster than real time sat here whole, and when it ended, seconds of audio were
    // demuxed in one call, at the same moment for every stream that had started together.
    writableHighWaterMark: WRITE_BUFFER_BYTES,
    transform(chunk: Buffer | Uint8Array, _encoding, callback) {
      try {
        demuxer.write(asBuffer(chunk), this);
        demuxer.caughtUp(this);
        callback();
      } catch (error) {
        callback(asError(error));
      }
    },
    flush(callback) {
      try {
        demuxer.end(this);
        callback();
      } catch (error) {
        callback(asError(error));
      }
    },
  });
  rebufferWhenDry(packetizer, demuxer);
  return packetizer;
}

/** A chunk as a Buffer, without copying it. */
export const asBuffer = (chunk: Buffer | Uint8Array): Buffer =>
  Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);

/** What a demuxer threw, as an Error for a stream to fail with. */
export const asError = (error: unknown): Error =>
  error instanceof Error ? error : new AudioFormatError('ERR_OPUS_CODEC', String(error));

/** The demuxer of {@link createOggOpusPacketizer}, for a caller that feeds it and takes its packets itself. */
export function createOggOpusDemuxer(options: OggOpusPacketizerOptions = {}): OggOpusDemuxer {
  const logger = options.logger ?? silentLogger;
  const reader = createOggPacketReader();
  let serial: number | undefined;
  /**
   * The first packet's first bytes, for the error that tells a stream without Opus. Copied: a view of the packet
   * would keep the reader's whole block (64 KiB when the service sent the clip at once) alive as long as the demuxer.
   */
  let firstBytes: Buffer | undefined;
  let phase: Phase = 'head';
  let head: OpusHead = { channels: 2, preSkip: 0, inputSampleRate: 0 };
  const stats = { packets: 0, passthrough: 0, split: 0, reencoded: 0 };
  let outputs = 0;

  // Created on the first frame that is not 20 ms; kept for the whole stream so the codecs keep their state.
  let codec: OpusCodec | undefined;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let skipSamples = 0;

  // The first packets wait until the player can start on them without running dry.
  const hold = createStartHold(options);
  const now = options.now ?? (() => performance.now());
  // When the packet being demuxed arrived (while the start is held).
  let packetArrivedAt = 0;
  const emit = (stream: PacketSink, packet: Buffer): void => {
    outputs++;
    hold.add(packet, stream, packetArrivedAt);
  };

  // Audio already passed through has used up the pre-skip: it is only dropped from decoded audio at the start.
  const emitUntouched = (stream: PacketSink, packet: Buffer): void => {
    skipSamples = 0;
    emit(stream, packet);
  };

  const frameBytes = (): number => FRAME_SAMPLES * head.channels * 2;

  const encodePending = (stream: PacketSink): void => {
    if (codec === undefined || pendingBytes < frameBytes()) return;
    let pcm = Buffer.concat(pending);
    while (pcm.length >= frameBytes()) {
      emit(
        stream,
        codecCall(() => codec?.encode(pcm.subarray(0, frameBytes()))),
      );
      stats.reencoded++;
      pcm = pcm.subarray(frameBytes());
    }
    pending = pcm.length > 0 ? [pcm] : [];
    pendingBytes = pcm.length;
  };

  const reencode = (stream: PacketSink, toc: number, frame: Buffer, frameMs: number): void => {
    codec ??= new opus.OpusEncoder(RATE, head.channels);
    const samples = (frameMs * RATE) / 1000;
    // A zero-length frame is DTX or a lost frame: silence of its duration keeps the timing.
    let pcm =
      frame.length === 0
        ? Buffer.alloc(samples * head.channels * 2)
        : codecCall(() => codec?.decode(Buffer.concat([Buffer.of(toc & 0xfc), frame])));
    if (skipSamples > 0) {
      const skip = Math.min(skipSamples, pcm.length / (2 * head.channels));
      skipSamples -= skip;
      pcm = pcm.subarray(skip * 2 * head.channels);
    }
    pending.push(pcm);
    pendingBytes += pcm.length;
    encodePending(stream);
  };

  const flushReencoder = (stream: PacketSink): void => {
    if (pendingBytes === 0 || codec === undefined) return;
    // Pad so the encoder's lookahead is pushed out too, then to a whole 20 ms frame of silence.
    const content = pendingBytes + ENCODER_LOOKAHEAD * 2 * head.channels;
    const padded = Math.ceil(content / frameBytes()) * frameBytes();
    pending.push(Buffer.alloc(padded - pendingBytes));
    pendingBytes = padded;
    encodePending(stream);
  };

  const onAudioPacket = (stream: PacketSink, packet: Buffer): void => {
    // RFC 7845 §3: a zero-length Ogg packet carries no audio.
    if (packet.length === 0) return;
    stats.packets++;
    const toc = packet[0] as number;
    // What a TTS service sends nearly always: one 20 ms frame (code 0), passed on as it is, without parsing it into
    // frames (an object, an array and a view per packet, every 20 ms of every stream).
    if (pendingBytes === 0 && codec === undefined && isOne20msFrame(packet)) {
      stats.passthrough++;
      emitUntouched(stream, packet);
      return;
    }
    const info = parseOpusPacket(packet);
    if (info.frameMs === 20 && pendingBytes === 0) {
      if (info.frames.length === 1) {
        stats.passthrough++;
        emitUntouched(stream, packet);
      } else {
        for (const frame of info.frames) {
          stats.split++;
          // Code 0 (count bits cleared) says "one frame": the rest of the packet is that frame.
          emitUntouched(stream, Buffer.concat([Buffer.of(toc & 0xfc), frame]));
        }
      }
      // A decoder that has seen earlier frames must also see these, or it would decode the next with stale state.
      if (codec !== undefined) {
        for (const frame of info.frames) {
          if (frame.length > 0) codecCall(() => codec?.decode(Buffer.concat([Buffer.of(toc & 0xfc), frame])));
        }
      }
      return;
    }
    for (const frame of info.frames) reencode(stream, toc, frame, info.frameMs);
  };

  const onPacket = (stream: PacketSink, packet: OggPacket): void => {
    firstBytes ??= copyStart(packet.data, 8);
    if (packet.bos && parseable(packet.data) && (serial === undefined || phase === 'audio')) {
      // A new Opus stream (the first, or a chained one after the previous ended).
      flushReencoder(stream);
      codec = undefined;
      head = parseOpusHead(packet.data);
      serial = packet.serial;
      phase = 'tags';
      skipSamples = outputs === 0 ? head.preSkip : 0;
      logger.debug('ogg opus stream', { serial, ...head });
      return;
    }
    if (serial === undefined) {
      // Other logical streams may start first (multiplexed Ogg), but only on beginning-of-stream pages.
      if (packet.bos) return;
      throw notOpus();
    }
    if (packet.serial !== serial) return;
    if (phase === 'tags') {
      // RFC 7845 §5.2: the second packet is OpusTags; its content does not matter for playback.
      phase = 'audio';
      return;
    }
    // A packet arrived with the last byte of its page.
    if (hold.holding) packetArrivedAt = options.arrivedAt?.(packet.end - 1) ?? now();
    onAudioPacket(stream, packet.data);
    if (packet.eos) flushReencoder(stream);
  };

  const notOpus = (): AudioFormatError =>
    new AudioFormatError(
      'ERR_NOT_OPUS',
      `Ogg stream does not hold Opus (no OpusHead; first packet starts ${describeBytes(firstBytes ?? Buffer.alloc(0))})`,
    );

  return {
    write(chunk, sink) {
      for (const packet of reader.push(chunk)) onPacket(sink, packet);
    },
    caughtUp(sink) {
      hold.caughtUp(sink);
    },
    end(sink) {
      reader.end();
      if (serial === undefined) throw notOpus();
      if (phase !== 'audio')
        throw new AudioFormatError('ERR_TRUNCATED', 'Ogg Opus stream ended before OpusTags');
      flushReencoder(sink);
      hold.end(sink);
      logger.debug('ogg opus done', { ...stats, outputs });
    },
    ranDry(playedMs) {
      hold.ranDry(playedMs);
    },
  };
}

function parseable(packet: Buffer): boolean {
  return packet.subarray(0, 8).equals(OPUS_HEAD);
}

function codecCall(call: () => Buffer | undefined): Buffer {
  try {
    const result = call();
    if (result === undefined) throw new Error('codec released');
    return result;
  } catch (error) {
    throw new AudioFormatError('ERR_OPUS_CODEC', `Opus codec failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
