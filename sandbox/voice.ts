/**
 * What Herald sends into the sandbox's voice channel, for the page: each Opus frame decoded here to 48 kHz mono
 * PCM (no FFmpeg, no decoder in the browser), and the bot's speaking state.
 */
import opus from '@discordjs/opus';
import type { VoiceCapture } from '../emulators/discord/index.ts';

const { OpusEncoder } = opus;

/** What the page hears: PCM frames (s16le, 48 kHz, mono) and speaking changes. */
export interface VoiceListener {
  pcm(frame: Buffer): void;
  /** Herald started (true) or stopped (false) sending audio; false also at the end of each clip. */
  speaking(on: boolean): void;
}

// Past this many frames the capture is emptied, so an afternoon in the sandbox does not grow without bound.
const KEEP_FRAMES = 500;

/** Forwards a guild's captured voice to `listener` as it arrives; returns the stop function. */
export function forwardVoice(capture: VoiceCapture, listener: VoiceListener): () => void {
  // One decoder per clip: Opus decoding carries state from frame to frame within a stream.
  let decoder: InstanceType<typeof OpusEncoder> | undefined;
  let cursor = 0;
  let speaking = false;
  const setSpeaking = (on: boolean): void => {
    if (on === speaking) return;
    speaking = on;
    listener.speaking(on);
  };
  const onChange = (): void => {
    const frames = capture.frames;
    if (frames.length < cursor) cursor = 0;
    for (; cursor < frames.length; cursor++) {
      const frame = frames[cursor];
      if (!frame) continue;
      if (frame.silence) {
        // @discordjs/voice ends every clip with five silence frames.
        decoder = undefined;
        setSpeaking(false);
        continue;
      }
      decoder ??= new OpusEncoder(48_000, 1);
      setSpeaking(true);
      listener.pcm(decoder.decode(frame.opus));
    }
    if (cursor > KEEP_FRAMES) {
      capture.clear();
      cursor = 0;
    }
    if (!capture.connected) setSpeaking(false);
  };
  return capture.subscribe(onChange);
}
