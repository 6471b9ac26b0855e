/**
 * A 20-server smoke run of `npm run bench`: the benchmark runs end to end against the emulators and Herald's own
 * process and produces a well-formed result. No figure is judged here (speed is read from the bench's output).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runBench } from '../../bench/bench.ts';

describe('npm run bench (smoke, 20 servers)', () => {
  it('measures every figure and reports the machine', { timeout: 240_000 }, async () => {
    const result = await runBench({ servers: [20], coldServers: 20, audioSeconds: 1, runs: 1 });

    expect(result.machine.cpus).toBeGreaterThan(0);
    expect(result.machine.node).toBe(process.version);
    expect(result.machine.commit).toMatch(/^[0-9a-f]{4,}$|^unknown$/);
    expect(result.machine.loadAverageAtStart).toHaveLength(3);
    // Herald ahead of the emulated world by default; below 0 needs root, and a run without it says why.
    expect(result.machine.heraldNice).toEqual(
      process.getuid?.() === 0 ? -10 : expect.stringMatching(/^not set \(/),
    );
    // A frame's encryption takes this machine microseconds: neither zero (nothing timed) nor a second.
    expect(result.machine.referenceFrameUs.atStart).toBeGreaterThan(0.1);
    expect(result.machine.referenceFrameUs.atEnd).toBeLessThan(1_000);
    for (const spread of [
      result.p1TtsToFirstPacketMs,
      result.p2SpeakToFirstPacketMs.cold,
      result.p2SpeakToFirstPacketMs.warm,
    ]) {
      expect(spread.n).toBe(1);
      expect(spread.median).toBeGreaterThan(0);
    }
    // Three queued utterances were heard, and the silence between them measured from their packets' times.
    expect(Number.isFinite(result.p3GapsMs.meanGapMs)).toBe(true);
    // One round (runs: 1), its silences rendered from what the member decoded, judged against the pause.
    expect(result.p3GapsMs.rounds).toHaveLength(1);
    expect(result.p3GapsMs.rounds[0]?.length).toBeGreaterThan(0);
    expect(result.p3GapsMs.roundsOff).toBe(
      result.p3GapsMs.rounds.filter(
        (gaps) =>
          gaps.length !== 2 || gaps.some((gap) => Math.abs(gap - result.p3GapsMs.configuredPauseMs) > 20),
      ).length,
    );
    const [step] = result.p4Concurrency;
    expect(step?.servers).toBe(20);
    // 1 s of audio a server (17 packets of up to 60 ms, and the end's frames of silence); every server was heard.
    expect(step?.streamedSeconds).toBeGreaterThanOrEqual(20 * 0.95);
    expect(step?.packets).toBeGreaterThanOrEqual(20 * 17);
    expect(step?.silentServers).toBe(0);
    expect(step?.lostPackets).toBe(0);
    expect(step?.rejectedPackets).toBe(0);
    expect(step?.cpuMsPerStreamSecond).toBeGreaterThan(0);
    // The emulated world's CPU by thread (Linux /proc): its main thread served the step's gateway and capture, the
    // TTS service's own thread its downloads.
    expect(step?.worldCpuByThread.main).toBeGreaterThan(0);
    expect(result.options.ttsThread).toBe(true);
    expect(step?.worldCpuByThread['tts-service']).toBeGreaterThan(0);
    // The step's packets were held by the native reader (CI's machines have a C compiler).
    expect(result.machine.nativeReader).toBe('built');
    expect(step?.heldBy).toMatchObject({ by: 'native', cpuMs: expect.any(Number) });
    expect(Object.keys(step?.worldCpuByThread ?? {})).toEqual([
      'main',
      'voice-receiver',
      'dave-members',
      'tts-service',
      'V8 helpers',
      'other',
    ]);
    expect(result.p5Memory.idleRssMb).toBeGreaterThan(0);
    expect(result.p6ColdBurst.servers).toBe(20);
    expect(result.p6ColdBurst.heard).toBe(20);
    expect(result.p6ColdBurst.paidUnheardUsd).toBe(0);
    expect(result.p6ColdBurst.toldSpeakingThenCouldNotConnect).toBe(0);
    expect(result.p6ColdBurst.neitherCount).toBe(0);
    if (result.baseline.ran) {
      // Where FFmpeg is installed, the peer baseline ran its one step on every frame of its streams.
      expect(result.baseline.steps[0]?.streams).toBe(10);
      expect(result.baseline.steps[0]?.cpuMsPerStreamSecond).toBeGreaterThan(0);
    } else expect(result.baseline.reason).toMatch(/ffmpeg/);
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });
});

describe('npm run bench:playback (smoke, 2 processes of 3 players)', () => {
  it('plays every packet to the sink and reports CPU, lateness and full collections', {
    timeout: 120_000,
  }, async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        join(import.meta.dirname, '..', '..', 'bench', 'playback.ts'),
        '--processes=2',
        '--players=3',
        '--seconds=1',
        '--rounds=1',
        '--no-write',
      ],
      { timeout: 110_000 },
    );
    expect(stdout).toMatch(/player processes' V8 flags: none/);
    const figures = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as {
      rounds: {
        packetsSent: number;
        packetsReceived: number;
        usPerPacket: number;
        msPerStreamSecond: number;
        fullCollectionsMs: number[];
      }[];
      lateShare: number;
    };
    const [round] = figures.rounds;
    // 1 s of speech is 17 packets of up to 60 ms a player, and the trailing silence frames: each of the 6 players'
    // reached the sink.
    expect(round?.packetsSent).toBeGreaterThanOrEqual(6 * 17);
    expect(round?.msPerStreamSecond).toBeGreaterThan(0);
    expect(round?.packetsReceived).toBe(round?.packetsSent);
    expect(round?.usPerPacket).toBeGreaterThan(0);
    expect(Array.isArray(round?.fullCollectionsMs)).toBe(true);
    expect(figures.lateShare).toBeGreaterThanOrEqual(0);
  });
});
