import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { analyse, decodeOpus } from '../../emulators/support/audio.ts';
import { readOggOpus } from '../../emulators/support/ogg.ts';
import { expectedDurationMs, startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';

const CLI = resolve(import.meta.dirname, '../../scripts/tts.ts');

let emu: TtsEmulator;
let dir: string;

beforeEach(async () => {
  emu = await startTtsEmulator({ basePath: '/gateway/tts/v1', speed: Infinity });
  dir = await mkdtemp(join(tmpdir(), 'herald-tts-cli-'));
});

afterEach(async () => {
  await emu.close();
  await rm(dir, { recursive: true, force: true });
});

/** Runs `npm run tts -- …` as the operator would, in an empty directory so no stray .env is read. */
async function tts(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, ...args], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? '',
        TTS_BASE_URL: emu.baseUrl,
        TTS_API_KEY: emu.apiKey,
        TTS_API_FORM: 'current',
        ...env,
      },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('npm run tts', () => {
  it('say writes a file that decodes to the expected tone and length, and reports cost and balance', async () => {
    const text = 'Hello from the operator tool';
    const out = join(dir, 'hello.ogg');
    const result = await tts(['say', text, '--speaker', 'nova', '--out', out]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);

    const ogg = readOggOpus(await readFile(out));
    const heard = analyse(decodeOpus(ogg.packets, ogg.head.channels === 2 ? 2 : 1));
    const expectedMs = expectedDurationMs(text);
    const nova = emu.speakers.find((speaker) => speaker.name === 'Nova');
    console.log(`cli say: expected ${expectedMs} ms, heard ${heard.soundMs.toFixed(0)} ms`, heard.segments);
    expect(heard.segments).toHaveLength(1);
    expect(heard.segments[0]?.dominantHz).toBeCloseTo(nova?.toneHz ?? 0, -1);
    expect(Math.abs(heard.soundMs - expectedMs)).toBeLessThan(100);

    const record = emu.requests.find((request) => request.path.endsWith('/speech/generate'));
    expect(record?.body).toMatchObject({ speaker_id: nova?.id, text });
    expect(result.stdout).toContain(`duration ${(expectedMs / 1000).toFixed(2)} s`);
    expect(result.stdout).toContain(`cost $${record?.chargedUsd.toFixed(6)}`);
    expect(result.stdout).toContain(`balance $${emu.balanceUsd.toFixed(6)}`);
  });

  it('speakers prints a table with every speaker', async () => {
    const result = await tts(['speakers']);
    expect(result.code).toBe(0);
    for (const speaker of emu.speakers) expect(result.stdout).toContain(speaker.id);
    expect(result.stdout).toContain(`${emu.speakers.length} speakers`);
  });

  it.each<[string, string[], Record<string, string>, string]>([
    [
      'a wrong key',
      ['speakers'],
      { TTS_API_KEY: 'ttsemu_live_0000000000000000000000' },
      'rejected the API key',
    ],
    ['a missing key', ['speakers'], { TTS_API_KEY: '' }, 'TTS_API_KEY is missing'],
    ['an unknown speaker name', ['say', 'hi', '--speaker', 'Nobody'], {}, 'no speaker is named "Nobody"'],
    ['an empty balance', ['say', 'hi', '--speaker', 'Bella', '--out', 'x.ogg'], {}, 'cannot pay'],
  ])('fails with one clear line and a non-zero exit on %s', async (name, args, env, expected) => {
    if (name === 'an empty balance') emu.balanceUsd = 0;
    const result = await tts(args, env);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain(expected);
    expect(result.stderr + result.stdout).not.toContain(emu.apiKey);
  });

  it('refuses bad usage with exit code 2', async () => {
    const result = await tts(['say', 'hi']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--speaker');
  });
});
