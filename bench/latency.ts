/**
 * Benchmark: how soon a member hears Herald. Prints, for /speak, the time from the interaction being sent to the
 * first voice packet arriving — cold (Herald joins the channel first) and warm (already in voice) — and the
 * silence between queued utterances. Run: `npm run bench:latency` (loopback only; both emulators in-process).
 */
import { createWorld } from '../test/e2e/harness.ts';

const RUNS = Number(process.env.RUNS ?? 15);
const world = await createWorld({ tts: { speed: 8 } });
const capture = world.discord.voice(world.guild);
const cold: number[] = [];
const warm: number[] = [];

try {
  for (let i = 0; i < RUNS; i++) {
    capture.clear();
    const start = performance.now();
    const reply = world.discord.slash(world.member, 'speak', { text: `Cold start number ${i}.` });
    await capture.untilFrames(1);
    cold.push(performance.now() - start);
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
  }
  await world.discord.slash(world.member, 'join');
  await capture.untilConnected();
  capture.clear();
  for (const text of ['First of three.', 'Second of three.', 'Third of three.']) {
    await world.discord.slash(world.member, 'speak', { text });
  }
  const heard = await capture.untilSilent({ quietMs: 800 });

  const stats = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const at = (q: number) =>
      sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
    return `median ${at(0.5).toFixed(1)} ms, min ${at(0).toFixed(1)} ms, p90 ${at(0.9).toFixed(1)} ms (n=${values.length})`;
  };
  console.log(`/speak → first voice packet, cold (join + speak): ${stats(cold)}`);
  console.log(`/speak → first voice packet, warm (in voice):     ${stats(warm)}`);
  console.log(
    `silence between queued utterances: ${heard.gapsMs.map((gap) => `${gap.toFixed(0)} ms`).join(', ')}`,
  );
  console.log(
    `packet pacing: mean ${heard.intervals.meanMs.toFixed(2)} ms, p99 ${heard.intervals.p99Ms.toFixed(2)} ms`,
  );
} finally {
  await world.close();
}
