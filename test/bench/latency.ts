/**
 * Benchmark: how soon a member hears Herald. Prints, for /speak, the time from the interaction being sent to the
 * first voice packet arriving — cold (Herald joins the channel first) and warm (already in voice) — and the
 * silence between queued utterances, under DAVE (the emulator's default, as on Discord), then the cold figure
 * with DAVE declined for comparison. Under DAVE the first packet is the first one the members decrypt: Herald
 * waits for the DAVE transition before playing. Run: `npm run bench:latency` (loopback only; emulators
 * in-process).
 */
import { createWorld } from '../e2e/harness.ts';

const RUNS = Number(process.env.RUNS ?? 15);
const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return `median ${at(0.5).toFixed(1)} ms, min ${at(0).toFixed(1)} ms, p90 ${at(0.9).toFixed(1)} ms (n=${values.length})`;
};

/** Lets the previous run's leave finish (the members' group re-keys without Herald) before the next cold join. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

/** Cold /speak → first voice packet with DAVE declined by the emulator (transport encryption only). */
async function coldWithoutDave(): Promise<number[]> {
  const plain = await createWorld({ tts: { speed: 8 }, discord: { dave: false } });
  const plainCapture = plain.discord.voice(plain.guild);
  const times: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      plainCapture.clear();
      const start = performance.now();
      const reply = plain.discord.slash(plain.member, 'speak', { text: `Cold start number ${i}.` });
      await plainCapture.untilFrames(1);
      times.push(performance.now() - start);
      await reply;
      await plainCapture.untilSilent({ quietMs: 300 });
      await plain.discord.slash(plain.member, 'leave');
      await plainCapture.untilDisconnected();
      await settle();
    }
  } finally {
    await plain.close();
  }
  return times;
}

const world = await createWorld({ tts: { speed: 8 } });
const capture = world.discord.voice(world.guild);
const cold: number[] = [];
const warm: number[] = [];
let firstFramesE2ee = 0;

try {
  for (let i = 0; i < RUNS; i++) {
    capture.clear();
    const start = performance.now();
    const reply = world.discord.slash(world.member, 'speak', { text: `Cold start number ${i}.` });
    await capture.untilFrames(1);
    cold.push(performance.now() - start);
    if (capture.frames.find((f) => !f.silence)?.e2ee) firstFramesE2ee += 1;
    await reply;
    await capture.untilSilent({ quietMs: 300 });

    capture.clear();
    const again = performance.now();
    await Promise.all([
      world.discord.slash(world.member, 'speak', { text: `Warm number ${i}.` }),
      capture.untilFrames(1),
    ]);
    warm.push(performance.now() - again);
    await capture.untilSilent({ quietMs: 300 });
    await world.discord.slash(world.member, 'leave');
    await capture.untilDisconnected();
    await settle();
  }
  await world.discord.slash(world.member, 'join');
  await capture.untilConnected();
  capture.clear();
  for (const text of ['First of three.', 'Second of three.', 'Third of three.']) {
    await world.discord.slash(world.member, 'speak', { text });
  }
  const heard = await capture.untilSilent({ quietMs: 800 });

  console.log(`/speak → first voice packet, cold under DAVE (join + speak): ${stats(cold)}`);
  console.log(`  first packets end-to-end encrypted: ${firstFramesE2ee}/${cold.length}`);
  console.log(`/speak → first voice packet, warm under DAVE (in voice):     ${stats(warm)}`);
  console.log(
    `silence between queued utterances: ${heard.gapsMs.map((gap) => `${gap.toFixed(0)} ms`).join(', ')}`,
  );
  console.log(
    `packet pacing: mean ${heard.intervals.meanMs.toFixed(2)} ms, p99 ${heard.intervals.p99Ms.toFixed(2)} ms`,
  );
} finally {
  await world.close();
}
console.log(`/speak → first voice packet, cold, DAVE declined:            ${stats(await coldWithoutDave())}`);
