import { describe, expect, it } from 'vitest';
import { createCapture } from '../../emulators/discord/capture.ts';
import type { CapturedFrame } from '../../emulators/discord/index.ts';
import { analyse } from '../../emulators/support/audio.ts';
import { encodeTone } from '../../emulators/tts/ogg.ts';
import { forwardVoice } from '../../sandbox/voice.ts';

// What the page receives of a guild's voice: every sounding frame as 20 ms of 48 kHz mono PCM, speaking changes.

const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
let seq = 0;
const frame = (opus: Buffer): CapturedFrame => ({
  opus,
  payload: opus,
  e2ee: false,
  dave: false,
  mode: 'aead_aes256_gcm_rtpsize',
  listeners: new Map(),
  receivedAt: performance.now(),
  ssrc: 1,
  seq: seq++,
  timestamp: seq * 960,
  silence: opus.equals(SILENCE),
});

function listen() {
  const sink = createCapture();
  const pcm: Buffer[] = [];
  const speaking: boolean[] = [];
  const stop = forwardVoice(sink.capture, { pcm: (f) => pcm.push(f), speaking: (on) => speaking.push(on) });
  return { sink, pcm, speaking, stop };
}

describe('forwardVoice', () => {
  it('decodes a clip to PCM of its pitch and length, and reports speaking from its first frame to its silence', () => {
    const { sink, pcm, speaking } = listen();
    sink.setConnected(true);
    const packets = encodeTone({ hz: 440, durationMs: 400, frameMs: 20, channels: 2 });
    for (const packet of packets) sink.push(frame(packet));
    expect(speaking).toEqual([true]);
    for (let i = 0; i < 5; i++) sink.push(frame(SILENCE));
    expect(speaking).toEqual([true, false]);
    expect(pcm).toHaveLength(packets.length);
    expect(pcm.every((f) => f.length === 960 * 2)).toBe(true);
    const samples = new Int16Array(Buffer.concat(pcm).buffer.slice(0));
    const heard = analyse(samples);
    expect(heard.segments).toHaveLength(1);
    expect(heard.segments[0]?.dominantHz).toBeCloseTo(440, -1);
    expect(heard.soundMs).toBeGreaterThan(380);
  });

  it('stops speaking when the voice connection goes, keeps the capture small, and stops on request', () => {
    const { sink, pcm, speaking, stop } = listen();
    sink.setConnected(true);
    const packets = encodeTone({ hz: 330, durationMs: 20, frameMs: 20, channels: 2 });
    const packet = packets[0] ?? Buffer.alloc(0);
    for (let i = 0; i < 600; i++) sink.push(frame(packet));
    expect(pcm).toHaveLength(600);
    // Forwarded frames are not kept for ever: the capture was emptied past 500.
    expect(sink.capture.frames.length).toBeLessThan(600);
    sink.setConnected(false);
    expect(speaking).toEqual([true, false]);
    stop();
    sink.push(frame(packet));
    expect(pcm).toHaveLength(600);
  });
});
