/**
 * The patch in patches/@discordjs+voice+0.19.2+009+multi-frame-packets.patch (see patches/README.md): with
 * `behaviors.maxFramesPerPacket`, the player joins up to that many 20 ms Opus frames its resource already holds
 * into one packet, sends it once, and sends nothing in the cycles its audio lasts; the connection advances the RTP
 * timestamp by what each packet holds. Without the option, one frame a packet, as before.
 */
import { Readable } from 'node:stream';
import { AudioPlayer, AudioPlayerStatus, AudioResource } from '@discordjs/voice';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { packetDurationMs, splitOpusFrames } from '../../emulators/support/audio.ts';
import { fakeCycleClock, flushTicks, standInConnection } from '../support/audio-cycle.ts';
import { readyNetworking } from '../support/voice-networking.ts';

/** A 20 ms CELT frame (TOC config 31, code 0) of `size` bytes after its TOC, its bytes marking it as frame `n`. */
function frame(n: number, size = 40, toc = 0xf8): Buffer {
  const packet = Buffer.alloc(size + 1, n);
  packet[0] = toc;
  return packet;
}

/** What the player asks of a voice connection, recorded; always Ready. */
function fakeConnection() {
  const sent: { packet: Buffer; at: number }[] = [];
  const connection = standInConnection({ sent: (packet) => sent.push({ packet, at: Date.now() }) });
  return { connection, sent };
}

/**
 * A resource whose stream holds `frames` now, then stays open (push more, or null to end it), followed by
 * `padding` frames of silence (five, as @discordjs/voice's default and Herald's).
 */
function resourceOf(frames: Buffer[], padding: number): { resource: AudioResource; stream: Readable } {
  const stream = new Readable({ objectMode: true, read() {} });
  for (const packet of frames) stream.push(packet);
  return { resource: new AudioResource([], [stream], undefined, padding), stream };
}

let player: AudioPlayer;
beforeEach(() => {
  fakeCycleClock();
});
afterEach(() => {
  player.stop(true);
  vi.useRealTimers();
});

/** Plays `frames` (held before the player starts) on a player sending up to `most` frames a packet. */
async function play(frames: Buffer[], most?: number, padding = 5) {
  player = new AudioPlayer(most === undefined ? {} : { behaviors: { maxFramesPerPacket: most } });
  const { connection, sent } = fakeConnection();
  (player as unknown as { subscribe(c: unknown): void }).subscribe(connection);
  const { resource, stream } = resourceOf(frames, padding);
  player.play(resource);
  await flushTicks();
  return { sent, stream, resource };
}

describe('@discordjs/voice AudioPlayer, several frames a packet (patched)', () => {
  it('sends three frames in one packet every 60 ms, the frames whole and in order', async () => {
    // Different sizes (VBR), one of them longer than 251 bytes (its length takes two bytes in the packet).
    const frames = [
      frame(1, 40),
      frame(2, 300),
      frame(3, 7),
      frame(4, 41),
      frame(5, 41),
      frame(6, 41),
      frame(7),
    ];
    const { sent, stream, resource } = await play(frames, 3);
    stream.push(null);
    await vi.advanceTimersByTimeAsync(200);

    const packets = sent.filter(({ packet }) => packet.length > 3);
    expect(packets.map(({ packet }) => packetDurationMs(packet))).toEqual([60, 60, 20]);
    expect(packets.flatMap(({ packet }) => splitOpusFrames(packet))).toEqual(frames);
    // One packet, then two cycles with nothing sent: each packet leaves 60 ms after the one before. The first left
    // at once, between two cycles (patch 003), so the second goes at the last cycle before it is due, not after.
    const [first = 0, second = 0, third = 0] = packets.map(({ at }) => at);
    expect(second - first).toBe(40);
    expect(third - second).toBe(60);
    expect(resource.playbackDuration).toBe(140);
  });

  it('sends one frame a packet without the option, as before', async () => {
    const { sent } = await play([frame(1), frame(2), frame(3), frame(4)]);
    await vi.advanceTimersByTimeAsync(100);
    expect(sent.slice(0, 4).map(({ packet }) => packet)).toEqual([frame(1), frame(2), frame(3), frame(4)]);
  });

  it('never waits for a frame: a packet holds what is ready when it is due', async () => {
    const { sent, stream } = await play([frame(1)], 3);
    await vi.advanceTimersByTimeAsync(30);
    stream.push(frame(2));
    stream.push(frame(3));
    await vi.advanceTimersByTimeAsync(60);
    const durations = sent
      .filter(({ packet }) => packet.length > 3)
      .map(({ packet }) => packetDurationMs(packet));
    expect(durations[0]).toBe(20);
    expect(durations[1]).toBe(40);
  });

  it('carries a frame of another configuration to the next packet instead of joining or losing it', async () => {
    // Hybrid, fullband, 20 ms (config 15): not joinable with CELT frames.
    const other = frame(3, 30, 0x7c);
    const frames = [frame(1), frame(2), other, frame(4), frame(5)];
    const { sent, stream } = await play(frames, 3);
    stream.push(null);
    await vi.advanceTimersByTimeAsync(200);
    const packets = sent.map(({ packet }) => packet).filter((packet) => packet.length > 3);
    expect(packets.flatMap((packet) => splitOpusFrames(packet))).toEqual(frames);
    expect(packets.map((packet) => packetDurationMs(packet))).toEqual([40, 20, 40]);
    expect(player.state.status).toBe(AudioPlayerStatus.Idle);
  });

  it('sends the last packet of a resource without silence padding before going idle', async () => {
    const frames = [frame(1), frame(2), frame(3), frame(4)];
    const { sent, stream } = await play(frames, 3, 0);
    stream.push(null);
    await vi.advanceTimersByTimeAsync(200);
    expect(sent.flatMap(({ packet }) => splitOpusFrames(packet))).toEqual(frames);
    expect(player.state.status).toBe(AudioPlayerStatus.Idle);
  });
});

describe('@discordjs/voice Networking, RTP timestamps of several frames a packet (patched)', () => {
  it('advances the timestamp by the samples each packet holds', () => {
    const networking = readyNetworking({ secret: Buffer.alloc(32, 7), ssrc: 7 });
    const timestamps: number[] = [];
    for (const packet of [frame(1), Buffer.from([0xfb, 0x03, 1, 2, 3]), frame(2)]) {
      timestamps.push(networking.prepareAudioPacket(packet)?.readUInt32BE(4) ?? Number.NaN);
      networking.dispatchAudio();
    }
    const [a = 0, b = 0, c = 0] = timestamps;
    expect([b - a, c - b]).toEqual([960, 2880]);
    networking.destroy();
  });
});
