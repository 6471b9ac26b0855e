/**
 * Which voice a member heard, from the audio alone: the TTS emulator speaks each voice as a sine of its own
 * pitch, so one decoded 20 ms frame's zero crossings name the voice. The soak gives auto-read one voice and
 * `/speak` others, so each utterance can be told apart in the voice channel without decoding whole clips.
 */
import opus from '@discordjs/opus';
import type { EmulatedSpeaker } from '../emulators/tts/index.ts';

/** Pitches far enough apart (200 Hz: 8 zero crossings per 20 ms frame) to tell apart after Opus. */
export const SOAK_TONES = [300, 500, 700, 900, 1100, 1300, 1500, 1700] as const;

/** The soak's voices: the first (the server default) reads auto-read messages, the others speak /speak. */
export const SOAK_SPEAKERS: readonly EmulatedSpeaker[] = SOAK_TONES.map((toneHz, i) => ({
  id: `00000000-0000-4000-8000-${(i + 1).toString(16).padStart(12, '0')}`,
  name: `Tone ${toneHz}`,
  voiceKey: `tone_${toneHz}`,
  gender: null,
  languages: null,
  toneHz,
}));

/** A per-server decoder (Opus is stateful) that names the tone of each frame, or undefined (fades, noise). */
export function createToneDetector(): (opus: Buffer) => number | undefined {
  const decoder = new opus.OpusEncoder(48_000, 1);
  return (opus) => {
    let pcm: Buffer;
    try {
      pcm = decoder.decode(opus);
    } catch {
      return undefined;
    }
    const samples = new Int16Array(pcm.buffer, pcm.byteOffset, Math.floor(pcm.byteLength / 2));
    let crossings = 0;
    let peak = 0;
    for (let i = 1; i < samples.length; i++) {
      const a = samples[i - 1] ?? 0;
      const b = samples[i] ?? 0;
      if ((a < 0 && b >= 0) || (a >= 0 && b < 0)) crossings++;
      peak = Math.max(peak, Math.abs(b));
    }
    if (peak < 1_000) return undefined;
    const hz = (crossings / 2) * (48_000 / samples.length);
    return SOAK_TONES.find((tone) => Math.abs(tone - hz) <= 80);
  };
}
