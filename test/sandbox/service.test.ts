import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SPEAKERS, startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { BadRequest } from '../../sandbox/http.ts';
import { createEmulatedServicePanel, FAULTS, type ServiceView } from '../../sandbox/service.ts';

// The service panel on a real TTS emulator over loopback: what the buttons do to the account, and the ledger.

let tts: TtsEmulator;
beforeAll(async () => {
  tts = await startTtsEmulator({ balanceUsd: 10, pricePerCharUsd: 0.001, speed: Number.POSITIVE_INFINITY });
});
afterAll(() => tts?.close());

const bella = DEFAULT_SPEAKERS[0]?.id ?? '';
async function generate(text: string): Promise<number> {
  const response = await fetch(`${tts.baseUrl}/speech/generate`, {
    method: 'POST',
    headers: { 'X-API-Key': tts.apiKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ text, speaker_id: bella }),
  });
  await response.arrayBuffer();
  return response.status;
}
const emulated = (view: ServiceView) => {
  if (view.kind !== 'emulated') throw new Error('expected the emulated panel');
  return view;
};

describe('the emulated service panel', () => {
  it('tops up, drains and sets the price; the ledger lists each request with its status and charge', async () => {
    const panel = createEmulatedServicePanel(tts, { pricePerCharUsd: 0.001, floorUsd: 1 });
    panel.act({ action: 'top-up', usd: 2.5 });
    expect(tts.balanceUsd).toBe(12.5);
    panel.act({ action: 'price', usd: 0.01 });
    expect(await generate('abcde')).toBe(200);
    expect(tts.balanceUsd).toBeCloseTo(12.45, 9);
    panel.act({ action: 'drain' });
    expect(await generate('abcde')).toBe(402);
    const view = emulated(panel.view());
    expect(view).toMatchObject({ balanceUsd: 0, pricePerCharUsd: 0.01, floorUsd: 1, chargedUsd: 0.05 });
    expect(view.ledger.map((row) => [row.status, row.chargedUsd, row.characters, row.speaker])).toEqual([
      [402, 0, 5, 'Bella'],
      [200, 0.05, 5, 'Bella'],
    ]);
    expect(view.ledger[1]?.audioMs).toBe(200);
  });

  it('injects each offered fault into the next request only', async () => {
    const panel = createEmulatedServicePanel(tts, { pricePerCharUsd: 0.001, floorUsd: 0 });
    panel.act({ action: 'top-up', usd: 5 });
    for (const [fault, status] of [
      ['429', 429],
      ['503', 503],
      ['402', 402],
    ] as const) {
      panel.act({ action: 'fault', fault });
      expect(await generate('hi')).toBe(status);
      expect(await generate('hi')).toBe(200);
    }
    expect(emulated(panel.view()).injected.map((f) => f.label)).toEqual([
      FAULTS['402']?.label,
      FAULTS['503']?.label,
      FAULTS['429']?.label,
    ]);
  });

  it('injects a stream at half real time into the next request only', async () => {
    const panel = createEmulatedServicePanel(tts, { pricePerCharUsd: 0.001, floorUsd: 0 });
    panel.act({ action: 'top-up', usd: 5 });
    panel.act({ action: 'fault', fault: 'slow' });
    expect(await generate('hi')).toBe(200);
    expect(await generate('hi')).toBe(200);
    expect(tts.requests.slice(-2).map((request) => request.faults)).toEqual([['slow'], []]);
    expect(emulated(panel.view()).injected[0]?.label).toBe('half real time');
  });

  it('injects a stream that slows down after its first second into the next request', async () => {
    const panel = createEmulatedServicePanel(tts, { pricePerCharUsd: 0.001, floorUsd: 0 });
    panel.act({ action: 'top-up', usd: 5 });
    panel.act({ action: 'fault', fault: 'slows-down' });
    expect(await generate('hi')).toBe(200);
    expect(tts.requests.at(-1)?.faults).toEqual(['slow']);
    expect(emulated(panel.view()).injected[0]?.label).toBe('slows down after 1 s');
  });

  it('injects latency, a stalled stream and a reset into the next request', async () => {
    const panel = createEmulatedServicePanel(tts, { pricePerCharUsd: 0.001, floorUsd: 0 });
    panel.act({ action: 'top-up', usd: 5 });
    const long = 'A sentence long enough for the audio to pass four hundred bytes.';
    const post = (signal?: AbortSignal) =>
      fetch(`${tts.baseUrl}/speech/generate`, {
        method: 'POST',
        headers: { 'X-API-Key': tts.apiKey, 'Content-Type': 'application/json' },
        body: JSON.stringify({ text: long, speaker_id: bella }),
        ...(signal ? { signal } : {}),
      });

    panel.act({ action: 'fault', fault: 'latency' });
    const started = performance.now();
    expect(await generate(long)).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2900);

    panel.act({ action: 'fault', fault: 'reset' });
    const reset = await post();
    await expect(reset.arrayBuffer()).rejects.toThrow();

    panel.act({ action: 'fault', fault: 'stall' });
    const abort = new AbortController();
    const stalled = await post(abort.signal);
    const reader = (stalled.body as ReadableStream<Uint8Array>).getReader();
    let bytes = 0;
    const outcome = await new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve('stalled'), 1000);
      const pump = (): void => {
        reader.read().then(
          ({ done, value }) => {
            if (done) {
              clearTimeout(timer);
              resolve('ended');
              return;
            }
            bytes += value.byteLength;
            pump();
          },
          () => resolve('failed'),
        );
      };
      pump();
    });
    abort.abort();
    expect(outcome).toBe('stalled');
    expect(bytes).toBeGreaterThanOrEqual(400);
    expect(await generate('hi')).toBe(200);
  });

  it('refuses what it does not know', () => {
    const panel = createEmulatedServicePanel(tts, { pricePerCharUsd: 0.001, floorUsd: 0 });
    expect(() => panel.act({ action: 'fault', fault: 'meteor' })).toThrow(BadRequest);
    expect(() => panel.act({ action: 'price', usd: -1 })).toThrow(BadRequest);
    expect(() => panel.act({ action: 'print-money' })).toThrow(BadRequest);
  });
});
