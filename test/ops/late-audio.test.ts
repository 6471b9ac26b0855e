/** The warning of speech audio that came slower than it plays (src/ops/late-audio.ts). */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { noOpsEvents } from '../../src/ops/index.ts';
import { warnOfLateAudio } from '../../src/ops/late-audio.ts';

function setup() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line)) });
  const passed = { gaps: 0, slowStarts: 0, starved: 0 };
  let clock = 1_000_000;
  const events = warnOfLateAudio(
    {
      ...noOpsEvents,
      voiceGap: () => passed.gaps++,
      voiceSlowStart: () => passed.slowStarts++,
      voiceStarved: () => passed.starved++,
    },
    logger,
    { everyMs: 600_000, now: () => clock },
  );
  const warnings = () => lines.filter((line) => line.level === 'warn');
  return { events, warnings, passed, advance: (ms: number) => (clock += ms) };
}

describe('warnOfLateAudio', () => {
  it('warns at the first gap, then at most once in ten minutes with what happened since', () => {
    const { events, warnings, advance } = setup();
    events.voiceGap();
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]?.msg).toBe(
      'Speech audio came slower than it plays: 0 utterances waited to start, 1 pause inside the words. The TTS service (or the network to it) is streaming slower than real time.',
    );
    for (let i = 0; i < 5; i++) {
      advance(60_000);
      events.voiceGap();
      events.voiceSlowStart();
    }
    expect(warnings()).toHaveLength(1);
    advance(300_000);
    events.voiceSlowStart();
    expect(warnings()).toHaveLength(2);
    expect(warnings()[1]?.msg).toMatch(
      /^Speech audio came slower than it plays in the last 10 minutes: 6 utterances waited to start, 5 pauses inside the words\./,
    );
    expect(warnings()[1]).toMatchObject({ slowStarts: 6, gaps: 5 });
  });

  it('passes every event on to the events it wraps', () => {
    const { events, passed } = setup();
    events.voiceGap();
    events.voiceGap();
    events.voiceSlowStart();
    events.voiceStarved();
    expect(passed).toEqual({ gaps: 2, slowStarts: 1, starved: 1 });
  });

  it('says nothing while the audio comes in time', () => {
    const { events, warnings } = setup();
    events.voicePacket(false);
    events.voiceStarved();
    expect(warnings()).toHaveLength(0);
  });
});
