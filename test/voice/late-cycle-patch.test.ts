/**
 * The patch in patches/@discordjs+voice+0.19.2+008+finish-a-due-cycle.patch (see patches/README.md): the audio
 * cycle prepares its players in slices (patch 006) only while the next cycle is not yet due. Once it is, the rest
 * are prepared at once: every slice left for a later turn of the event loop waited behind that turn's I/O, and with
 * hundreds of players the cycle's preparation ran on over many turns while every player's next packet waited.
 */
import type { AudioPlayer } from '@discordjs/voice';
import { afterEach, expect, it } from 'vitest';
import { playingPlayer } from '../support/audio-cycle.ts';
import { busy } from '../support/busy.ts';

const players: AudioPlayer[] = [];
afterEach(() => {
  for (const player of players.splice(0)) player.stop(true);
});

it('prepares the rest of a cycle at once when the next cycle is due, instead of one slice per turn', async () => {
  // Counts the turns of the event loop, each of which also holds the thread for 3 ms (other work: sockets, timers).
  let turn = 0;
  let counting = true;
  const count = (): void => {
    turn++;
    busy(3);
    if (counting) setImmediate(count);
  };
  setImmediate(count);

  // Each cycle: the turn in which each of its players was prepared. 30 players at 2 ms each need 60 ms, three
  // cycles' time: unpatched (slices of 4 ms, two players each) every cycle spans 15 turns.
  const cycles: number[][] = [];
  for (let i = 0; i < 30; i++) {
    const first = i === 0;
    players.push(
      playingPlayer({
        prepare: () => {
          busy(2);
          cycles.at(-1)?.push(turn);
        },
        // The first player's dispatch opens a cycle (every player is dispatched at the start of each).
        dispatch: () => {
          if (first) cycles.push([]);
        },
      }),
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 400));
  counting = false;

  // Whole cycles only (the last may have been cut off by the end of the test).
  const whole = cycles.filter((prepared) => prepared.length === 30);
  expect(whole.length).toBeGreaterThanOrEqual(2);
  // Patched: slices until the next cycle is due (about 16 ms: at most five slices), then the rest in one go.
  for (const prepared of whole) expect(new Set(prepared).size).toBeLessThanOrEqual(8);
});
