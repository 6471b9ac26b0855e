/**
 * The voice receiver's thread can run ahead of the machine's other work (the bench asks for it): its timestamps
 * are the measure of every packet's lateness, and a receiving thread waiting for a core stamps its own wait.
 */
import { afterEach, expect, it } from 'vitest';
import { type DiscordEmulator, startDiscordEmulator } from '../../../emulators/discord/index.ts';

let emulator: DiscordEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

it('runs the receiving thread at the nice value asked for, and reports it', async () => {
  // Above 0 needs no privilege, so this holds for any user.
  emulator = await startDiscordEmulator({ receiverNice: 7 });
  expect(emulator.receiverNice).toBe(7);
});

it('leaves the receiving thread as the process when nothing is asked', async () => {
  emulator = await startDiscordEmulator();
  expect(emulator.receiverNice).toBeUndefined();
});
