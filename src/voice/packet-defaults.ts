/**
 * 20 ms Opus frames in one voice packet when `VOICE_FRAMES_PER_PACKET` is not set (see the session's
 * `framesPerPacket`). In a file of its own so that reading the configuration does not load the voice stack.
 */
export const DEFAULT_FRAMES_PER_PACKET = 3;
