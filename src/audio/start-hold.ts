import { type Readable, Transform } from 'node:stream';
import { type Logger, silentLogger } from '../log.ts';

/** Where packets go: a Transform's or a Readable's `push`. */
export interface PacketSink {
  push(packet: Buffer): unknown;
}

/** When the first 20 ms packets of a stream may go to the player ({@link createStartHold}). */
export interface StartHoldOptions {
  /**
   * The first packets are held until this many are ready (or the input ends), then pushed together; default 1.
   * A player starts on the first packet it can read: from a service that sends at real time, one packet ahead
   * runs dry at the next 20 ms tick at the least delay, and the listeners hear a frame of silence in the first
   * words. A few frames ahead absorb that; from a service faster than real time they are there within milliseconds.
   */
  readonly startFrames?: number;
  /**
   * How many packets to hold instead when they came slower than twice real time (default `startFrames`): a player
   * that starts on held packets is ahead of a slow service by little more than what it held (Herald's figures:
   * SLOW_START_FRAMES in resource.ts). A faster service is never held longer.
   */
  readonly slowStartFrames?: number;
  /**
   * The audio's length in ms as the service announced it (`X-Audio-Duration`). From a service slower than real time
   * the player would run dry inside the words, once for every frame it falls behind; knowing the length, the first
   * packets are held (beyond `slowStartFrames`) until the rest, at the pace they are coming, arrives before it is
   * due, so the words are heard whole after a longer wait. Unknown: the holds above alone.
   */
  readonly durationMs?: number;
  /**
   * The most packets held again when the player ran dry inside the audio ({@link StartHold.ranDry}); default no
   * limit. While they are held the player sends frames of silence and counts them missed, and gives the audio up
   * after its `maxMissedFrames`: this stays well below that.
   */
  readonly maxRebufferFrames?: number;
  /** Told (at debug) when a slow service's audio was held to play through, at the start or after running dry. */
  readonly logger?: Logger;
  /** Told when the start was held longer because the service sends slower than real time: for how long (ms of
   *  audio held) and at what pace (ms of audio per ms). */
  readonly onSlowStart?: (heldMs: number, pace: number) => void;
}

/**
 * The first packets of one stream, held until the player can start on them without running dry; and when it ran dry
 * all the same (the service stalled or slowed down inside the audio), the next ones, held the same way for the rest of
 * the audio: one pause, then the words whole, rather than a frame of silence every few frames.
 */
export interface StartHold {
  /** True while packets are held; otherwise every packet is pushed as it comes. */
  readonly holding: boolean;
  /** Pushes `packet`, or holds it while the start waits; `arrivedAt` is when its bytes arrived (in ms). */
  add(packet: Buffer, sink: PacketSink, arrivedAt: number): void;
  /**
   * Everything received so far has been added: pushes the packets held once enough of them have come for the pace
   * they came at. The pace is judged from their arrival times, not from when they were added: a backlog (a
   * service's first pages, received while the voice connection got ready) added in one go is no faster for it.
   */
  caughtUp(sink: PacketSink): void;
  /** The input ended: pushes whatever is held. */
  end(sink: PacketSink): void;
  /**
   * The player asked for a packet and there was none, `playedMs` into the audio, before the input ended: the packets
   * from now on are held as at the start, judged by the pace they come at from now and the length still to come
   * (`durationMs` less `playedMs`), at most `maxRebufferFrames` of them; any pace below real time counts as slow
   * (the service is known to be behind). Ignored while holding.
   */
  ranDry(playedMs: number): void;
}

/** Every packet a player takes lasts this long. */
const PACKET_MS = 20;
/**
 * Packets that arrived within this long of the first came with it, in the same piece of the response: how long
 * they took to come is not known, so the pace is measured from the packets after them.
 */
const SAME_ARRIVAL_MS = 1;
/**
 * How far a service may fall behind by the end without a longer hold: a page read a little late (a busy event loop,
 * the service's own timer) makes a service at real time seem a little slower, and what `slowStartFrames` holds beyond
 * `startFrames` (40 ms in Herald) has room for half of that.
 */
const BEHIND_ALLOWED_MS = 20;
/**
 * A page may come this much later than a service at real time would have sent it (counted from the first arrival)
 * and the service still be taken for one at real time: a pace measured from a few pages, one of them read late,
 * would hold a service at real time for nothing. Below about 0.85 × real time the fifth page is later than that.
 */
const REAL_TIME_JITTER_MS = 10;

/** Holds the first packets of a stream as {@link StartHoldOptions} say; a start that never waits holds nothing. */
export function createStartHold(options: StartHoldOptions = {}): StartHold {
  const startFrames = options.startFrames ?? 1;
  const slowStartFrames = Math.max(startFrames, options.slowStartFrames ?? startFrames);
  const maxRebufferFrames = options.maxRebufferFrames ?? Number.POSITIVE_INFINITY;
  const logger = options.logger ?? silentLogger;
  // The length of the audio still to come when the packets held go: all of it at the start, the rest after a rebuffer.
  let durationMs = options.durationMs;
  // Undefined once the held packets have gone.
  let held: Buffer[] | undefined = slowStartFrames > 1 ? [] : undefined;
  /** The player ran dry inside the audio, and the packets held are its rest. */
  let rebuffering = false;
  let ended = false;
  let firstAt = 0;
  let lastAt = 0;
  /** Packets that came with the first. */
  let withFirst = 0;
  /** The most that a packet after the first arrival came later than a service at real time would have sent it. */
  let mostLate = Number.NEGATIVE_INFINITY;

  const release = (sink: PacketSink): void => {
    for (const packet of held ?? []) sink.push(packet);
    held = undefined;
  };

  /**
   * Frames a service slower than real time falls behind over the whole audio: at `pace` ms of audio per ms it
   * sends `durationMs` in `durationMs / pace`, so a player started on the first packets would be short of
   * `durationMs × (1 − pace)` by the end; started with that much more in hand (less what it may fall behind
   * anyway) it plays on without running dry.
   */
  const framesBehind = (pace: number): number =>
    durationMs === undefined || pace >= 1
      ? 0
      : Math.max(0, Math.ceil((durationMs * (1 - pace) - BEHIND_ALLOWED_MS) / PACKET_MS));

  return {
    get holding() {
      return held !== undefined;
    },
    add(packet, sink, arrivedAt) {
      if (held === undefined) {
        sink.push(packet);
        return;
      }
      held.push(packet);
      if (held.length === 1) firstAt = arrivedAt;
      if (arrivedAt <= firstAt + SAME_ARRIVAL_MS) withFirst++;
      else mostLate = Math.max(mostLate, arrivedAt - (firstAt + (held.length - withFirst) * PACKET_MS));
      lastAt = Math.max(lastAt, arrivedAt);
    },
    caughtUp(sink) {
      const count = held?.length ?? 0;
      if (count === 0) return;
      // The pace the packets after the first arrival came at, in ms of audio per ms; unknown while none has.
      const span = lastAt - firstAt;
      const pace = span > SAME_ARRIVAL_MS ? ((count - withFirst) * PACKET_MS) / span : undefined;
      // At twice real time or faster, the packets after the first `startFrames` come sooner than the player needs them.
      const fast = pace !== undefined && pace >= 2 && count >= startFrames;
      // A page read a little late does not make a start wait; after running dry, the service is known to be behind,
      // and any pace below real time counts (a page read late is soon made up by the next, which shows the pace).
      const slow = pace !== undefined && (rebuffering ? pace < 1 : mostLate > REAL_TIME_JITTER_MS);
      const behind = slow ? framesBehind(pace) : 0;
      const longest = rebuffering && count >= maxRebufferFrames;
      if (!fast && !longest) {
        if (count < slowStartFrames + behind) return;
        // With the length known, a start waits until the pace shows (the next piece of the response, or its end).
        if (pace === undefined && durationMs !== undefined) return;
      }
      if (rebuffering) {
        logger.debug('ran dry inside the audio: held to play on', {
          pace: pace === undefined ? undefined : Math.round(pace * 100) / 100,
          heldMs: count * PACKET_MS,
          durationMs,
        });
      } else if (behind > 0 && pace !== undefined) {
        logger.debug('a service slower than real time: held to play through', {
          pace: Math.round(pace * 100) / 100,
          heldMs: count * PACKET_MS,
          durationMs,
        });
        options.onSlowStart?.(count * PACKET_MS, pace);
      }
      release(sink);
    },
    end(sink) {
      ended = true;
      release(sink);
    },
    ranDry(playedMs) {
      if (held !== undefined || ended || slowStartFrames <= 1) return;
      rebuffering = true;
      durationMs = options.durationMs === undefined ? undefined : Math.max(0, options.durationMs - playedMs);
      held = [];
      firstAt = 0;
      lastAt = 0;
      withFirst = 0;
      mostLate = Number.NEGATIVE_INFINITY;
    },
  };
}

/**
 * Tells `hold` whenever the reader of `stream` (the audio player: one `read()` a 20 ms tick) asks for a packet and
 * gets none, and how much it had played by then: the end of the input aside, that is the player running dry inside
 * the audio, and it sends a frame of silence in its place. The internal `read(0)`s of a Readable are not asks.
 */
export function rebufferWhenDry(stream: Readable, hold: Pick<StartHold, 'ranDry'>): void {
  const read = stream.read.bind(stream);
  let played = 0;
  stream.read = (size?: number) => {
    const packet = read(size);
    if (size === undefined) {
      if (packet !== null) played++;
      else if (!stream.destroyed) hold.ranDry(played * PACKET_MS);
    }
    return packet;
  };
}

/** Options of {@link createStartHoldStream}. */
export interface StartHoldStreamOptions extends StartHoldOptions {
  /** When the input behind the packet at `index` (0 for the first out) arrived, in ms; undefined when not known. */
  readonly arrivedAt?: (index: number) => number | undefined;
  /** The clock, in ms, when `arrivedAt` does not know: when the packet came out; default `performance.now`. */
  readonly now?: () => number;
}

/**
 * The start hold as a Transform of 20 ms packets (object mode), behind a pipeline that makes them from bytes (WAV
 * through an Opus encoder). Each packet is judged as it comes: a piece of input that makes several packets is then
 * judged on its first ones, which can only make the pace seem slower for a moment and hold longer, never less.
 */
export function createStartHoldStream(options: StartHoldStreamOptions = {}): Transform {
  const hold = createStartHold(options);
  const now = options.now ?? (() => performance.now());
  let index = 0;
  const stream = new Transform({
    objectMode: true,
    transform(packet: Buffer, _encoding, callback) {
      if (hold.holding) {
        hold.add(packet, this, options.arrivedAt?.(index) ?? now());
        hold.caughtUp(this);
      } else {
        this.push(packet);
      }
      index++;
      callback();
    },
    flush(callback) {
      hold.end(this);
      callback();
    },
  });
  rebufferWhenDry(stream, hold);
  return stream;
}
