/**
 * The patch in patches/@discordjs+voice+0.19.2+006+prepare-in-slices.patch (see patches/README.md): the audio cycle
 * prepares its players' next frames one after another for up to a few milliseconds, instead of one player per
 * turn of the event loop. Every turn also runs whatever I/O is due, so one player per turn stretched a cycle over
 * hundreds of turns once hundreds of players and their downloads were busy, and every packet went out late.
 */
import type { AudioPlayer } from '@discordjs/voice';
import { afterEach, expect, it } from 'vitest';
import { playingPlayer } from '../support/audio-cycle.ts';

const players: AudioPlayer[] = [];
afterEach(() => {
  for (const player of players.splice(0)) player.stop(true);
});

it("prepares all of a cycle's players within a turn or two of the event loop, not one turn each", async () => {
  // Counts the turns of the event loop: one immediate per turn, each queueing the next.
  let turn = 0;
  let counting = true;
  const count = (): void => {
    turn++;
    if (counting) setImmediate(count);
  };
  setImmediate(count);

  const turnsOfPrepares: number[] = [];
  for (let i = 0; i < 40; i++) {
    players.push(
      playingPlayer({
        prepare: () => {
          turnsOfPrepares.push(turn);
        },
      }),
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 150));
  counting = false;

  // Several cycles of 40 players each; unpatched, each prepare had a turn of its own.
  expect(turnsOfPrepares.length).toBeGreaterThan(80);
  const turns = new Set(turnsOfPrepares).size;
  expect(turns).toBeLessThan(turnsOfPrepares.length / 5);
});
