/**
 * For tests of @discordjs/voice's global audio cycle (the patches to it): players on stand-in connections that are
 * always ready.
 */
import { Readable } from 'node:stream';
import { AudioPlayer, AudioResource, NoSubscriberBehavior, VoiceConnectionStatus } from '@discordjs/voice';
import { vi } from 'vitest';

/** Fakes the clock the audio cycle runs on (timers, immediates and Date, from 1,000,000 ms); nextTick stays real. */
export function fakeCycleClock(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'Date'] });
  vi.setSystemTime(1_000_000);
}

/**
 * A stand-in voice connection, always Ready, as the player drives it: it keeps the packet prepared (`prepared` is
 * told) and sends it at the next dispatch (`sent` is told).
 */
export function standInConnection(hooks: {
  readonly prepared?: (packet: Buffer) => void;
  readonly sent: (packet: Buffer) => void;
}) {
  let prepared: Buffer | undefined;
  return {
    state: { status: VoiceConnectionStatus.Ready },
    setSpeaking: () => {},
    prepareAudioPacket(packet: Buffer) {
      prepared = packet;
      hooks.prepared?.(packet);
    },
    dispatchAudio() {
      if (!prepared) return false;
      hooks.sent(prepared);
      prepared = undefined;
      return true;
    },
  };
}

/** Lets the streams' process.nextTick work ('readable') run; fake timers leave it real. */
export async function flushTicks(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => process.nextTick(resolve));
}

/** What the stand-in connection does when the cycle prepares a frame for it, and when it dispatches one. */
export interface CycleHooks {
  readonly prepare?: () => void;
  /** Called at the start of each cycle for every playing player. */
  readonly dispatch?: () => void;
}

/**
 * A player subscribed to a stand-in connection in the Ready state, playing far more frames than a test plays (it
 * never runs dry), so it takes part in every cycle. Stop it with `player.stop(true)`.
 */
export function playingPlayer(hooks: CycleHooks = {}): AudioPlayer {
  const player = new AudioPlayer({ behaviors: { noSubscriber: NoSubscriberBehavior.Play } });
  const connection = {
    state: { status: VoiceConnectionStatus.Ready },
    setSpeaking: () => {},
    prepareAudioPacket: () => hooks.prepare?.(),
    dispatchAudio: () => {
      hooks.dispatch?.();
      return true;
    },
  };
  (player as unknown as { subscribe(c: unknown): void }).subscribe(connection);
  const stream = new Readable({ objectMode: true, read() {} });
  for (let frame = 0; frame < 500; frame++) stream.push(Buffer.from([0xfc, frame & 0xff, 1, 2]));
  player.play(new AudioResource([], [stream], undefined, 0));
  return player;
}
