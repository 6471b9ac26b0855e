/**
 * `npm run emulate:tts`: runs the TTS emulator on 127.0.0.1 until SIGINT/SIGTERM and prints its base URL and a
 * valid key. Environment: PORT (default random), TTS_EMULATOR_FORM ('current' | 'variant'), TTS_EMULATOR_SPEED.
 */
import { startTtsEmulator } from './index.ts';

const port = Number(process.env.PORT ?? 0);
const form = process.env.TTS_EMULATOR_FORM === 'variant' ? 'variant' : 'current';
const speed = process.env.TTS_EMULATOR_SPEED === undefined ? 4 : Number(process.env.TTS_EMULATOR_SPEED);
const emulator = await startTtsEmulator({ port: Number.isInteger(port) && port > 0 ? port : 0, form, speed });
console.log(`TTS emulator listening: ${emulator.baseUrl}`);
console.log(`API key: ${emulator.apiKey}`);
for (const speaker of emulator.speakers)
  console.log(`  speaker ${speaker.id} ${speaker.name} (${speaker.toneHz} Hz)`);

const stop = (): void => {
  emulator.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
