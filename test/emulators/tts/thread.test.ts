/**
 * The TTS emulator on a thread of its own (the benchmark's): the same service over HTTP, its recorded requests and
 * settings read and set from the main thread, and a clean close.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  handleOf,
  startTtsEmulator,
  startTtsEmulatorThread,
  type TtsEmulatorHandle,
} from '../../../emulators/tts/index.ts';

const open: TtsEmulatorHandle[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((handle) => handle.close()));
});

async function generate(handle: TtsEmulatorHandle, text: string): Promise<Response> {
  const response = await fetch(`${handle.baseUrl}/speech/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': handle.apiKey },
    body: JSON.stringify({ text, speaker_id: handle.speakers[0]?.id, language: 'en' }),
  });
  await response.arrayBuffer();
  return response;
}

function threadNames(): string[] {
  return readdirSync('/proc/self/task').map((tid) =>
    readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim(),
  );
}

describe.each([
  ['on a thread of its own', () => startTtsEmulatorThread({ speed: 50, pricePerCharUsd: 0.001 })],
  ['on this thread', async () => handleOf(await startTtsEmulator({ speed: 50, pricePerCharUsd: 0.001 }))],
])('the TTS emulator %s', (_where, start) => {
  it('serves speech and reports each request, its charge and the settings it was given', async () => {
    const handle = await start();
    open.push(handle);
    expect(handle.speakers.length).toBeGreaterThan(0);

    expect((await generate(handle, 'Hello.')).status).toBe(200);
    expect(await handle.requestCount()).toBe(1);
    await handle.configure({ pricePerCharUsd: 0.01 });
    expect((await generate(handle, 'Hi.')).status).toBe(200);

    const requests = await handle.requests();
    expect(requests.map((request) => [request.status, request.chargedUsd])).toEqual([
      [200, 0.006],
      [200, 0.03],
    ]);
    expect((await handle.requests(1)).map((request) => request.body)).toEqual([
      expect.objectContaining({ text: 'Hi.' }),
    ]);
    expect(await handle.requestCount()).toBe(2);
  });
});

describe('the TTS emulator’s thread', () => {
  it('is a thread of this process, and stops serving when closed', async () => {
    const handle = await startTtsEmulatorThread();
    expect(handle.runsOn).toBe('thread');
    // Named, so the benchmark reads its CPU apart from the emulated Discord's (Linux: /proc/self/task/*/comm).
    expect(threadNames()).toContain('tts-service');
    expect((await generate(handle, 'Before.')).status).toBe(200);
    await handle.close();
    await expect(fetch(`${handle.baseUrl}/speech/speakers`)).rejects.toThrow();
    // A call after close is refused rather than left waiting.
    await expect(handle.requestCount()).rejects.toThrow(/closed/);
  });
});
