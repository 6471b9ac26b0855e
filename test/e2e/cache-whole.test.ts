import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SPEAKERS, expectedDurationMs } from '../../emulators/tts/index.ts';
import { createWorld, type World } from './harness.ts';

// The cache keeps only whole clips: a body that ends cleanly but short (at a page boundary, without the
// end-of-stream page, or with nothing at all) is told to the member as cut short, never stored, and paid and heard
// whole the next time.

const bella = DEFAULT_SPEAKERS[0];
let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});
async function open(): Promise<World> {
  world = await createWorld({ tts: { pricePerCharUsd: 0.001 }, env: { AUDIO_CACHE_MB: '256' } });
  return world;
}
const generations = (w: World) =>
  w.tts.requests.filter((r) => r.path.endsWith('/speech/generate') && r.chargedUsd > 0);
const cacheDir = (w: World) =>
  join(dirname((w.env.DATABASE_URL ?? '').replace(/^sqlite:/, '')), 'audio-cache');
const cacheFiles = (w: World) =>
  readdirSync(cacheDir(w), { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.hac'))
    .map((entry) => entry.name);

async function settle(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

describe('the cache keeps only whole clips', () => {
  for (const [name, fraction] of [
    ['a body that ends cleanly at half', 0.5],
    ['an empty body', 0],
  ] as const) {
    it(`${name}: the member is told it was cut short, nothing is cached, the next request is paid and heard whole`, async () => {
      const w = await open();
      const text = 'The whole sentence, every word of it.';
      w.tts.inject({ kind: 'truncate', fraction }, { times: 1 });
      const reply = await w.discord.slash(w.member, 'speak', { text });
      const failure = await reply.untilFollowUp({ timeoutMs: 15_000 });
      expect(failure.ephemeral).toBe(true);
      expect(failure.content).toMatch(/audio stopped short/);
      // Time for a store that should not happen to happen (the failure is told once the audio ran out).
      await settle(300);
      expect(cacheFiles(w)).toEqual([]);
      expect(generations(w)).toHaveLength(1);

      const again = await w.discord.slash(w.member, 'speak', { text });
      expect(again.content).toMatch(/Speaking now|Queued/);
      const heard = await w.discord.voice(w.guild).untilSilent({ quietMs: 400 });
      expect(generations(w)).toHaveLength(2);
      for (const segment of heard.segments) expect(segment.dominantHz).toBeCloseTo(bella?.toneHz ?? 0, -1);
      expect(heard.soundMs).toBeGreaterThan(expectedDurationMs(text) - 60);
      // The whole clip is the one cached.
      await settle(300);
      expect(cacheFiles(w)).toHaveLength(1);
    }, 40_000);
  }
});
