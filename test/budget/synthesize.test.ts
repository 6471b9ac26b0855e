import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import {
  BudgetRefusedError,
  budgetedSynthesize,
  createTtsProbe,
  PROBE_TEXT,
} from '../../src/budget/index.ts';
import { UserFacingError } from '../../src/discord/member-facing.ts';
import { describeFailure } from '../../src/discord/replies.ts';
import { silentLogger } from '../../src/log.ts';
import {
  createTtsClient,
  type GenerateRequest,
  type GenerateResult,
  type Speaker,
  type TtsClient,
  TtsInsufficientBalanceError,
} from '../../src/tts/index.ts';
import type { SpeechRequest } from '../../src/voice/session.ts';
import { makeGuard } from './helpers.ts';

const SPEAKER: Speaker = {
  id: '0b5a6d4e-3f1c-4a8e-9d2b-7c1e5f3a9b01',
  name: 'Bella',
  voiceKey: 'af_bella',
  gender: null,
  languages: null,
};

function speech(text: string, userId = 'm1'): SpeechRequest {
  return { text, speaker: SPEAKER, requestedBy: { id: userId, name: userId }, onFailure: () => {} };
}

function result(money: Partial<GenerateResult>): GenerateResult {
  return {
    audio: Readable.from([]),
    contentType: 'audio/ogg',
    format: 'opus',
    sampleRate: 24_000,
    durationS: 1,
    costUsd: undefined,
    balanceUsd: undefined,
    requestId: undefined,
    attempts: 1,
    ...money,
  };
}

describe('budgetedSynthesize', () => {
  it('refuses before any call to the service, with a sentence the member sees', async () => {
    const { guard } = await makeGuard({
      account: { balanceUsd: 0.5, pricePerCharUsd: 0.0001, priceCharacters: 100 },
    });
    let calls = 0;
    const synthesize = budgetedSynthesize(guard, async () => {
      calls += 1;
      return result({});
    }).synthesize;
    const failure = await synthesize(speech('hello'), new AbortController().signal, 'g1').catch(
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(BudgetRefusedError);
    expect(failure).toBeInstanceOf(UserFacingError);
    expect((failure as BudgetRefusedError).refusal.kind).toBe('blocked');
    expect(describeFailure(failure, silentLogger)).toBe(
      'Herald has stopped speaking: the account balance ($0.50) has reached the floor the operator set ($0.50).',
    );
    expect(calls).toBe(0);
  });

  it('settles with the response headers, counting the text’s code points, under the given server', async () => {
    const { guard, store } = await makeGuard();
    const synthesize = budgetedSynthesize(guard, async (request) =>
      result({ costUsd: 0.0003, balanceUsd: 9.9997, requestId: `r-${request.text}` }),
    ).synthesize;
    await synthesize(speech('a😀b', 'm7'), new AbortController().signal, 'g9');
    expect(await store.ledger()).toMatchObject([
      {
        guildId: 'g9',
        userId: 'm7',
        characters: 3,
        costUsd: 0.0003,
        balanceAfterUsd: 9.9997,
        requestId: 'r-a😀b',
      },
    ]);
    expect(await guard.status()).toMatchObject({ balanceUsd: 9.9997, priceSource: 'learned', inFlight: 0 });
    expect((await guard.status()).pricePerCharUsd).toBeCloseTo(0.0001, 12);
  });

  it('a 402 from the service releases the reservation, blocks, and is rethrown', async () => {
    const { guard } = await makeGuard({ pricePerCharUsd: 0.0001 });
    const refused = new TtsInsufficientBalanceError('no', { status: 402, balanceUsd: 0.01 });
    const synthesize = budgetedSynthesize(guard, async () => {
      throw refused;
    }).synthesize;
    await expect(synthesize(speech('hi'), new AbortController().signal, 'g1')).rejects.toBe(refused);
    expect(await guard.status()).toMatchObject({ status: 'blocked', reason: 'service-refused', inFlight: 0 });
  });
});

describe('createTtsProbe', () => {
  it('generates one character with the first listed speaker and drains the audio', async () => {
    const sent: GenerateRequest[] = [];
    const audio = Readable.from([Buffer.from('x')]);
    const tts = {
      speakers: async () => [SPEAKER],
      generate: async (request: GenerateRequest) => {
        sent.push(request);
        return result({ audio, costUsd: 0.0001, balanceUsd: 4.2, requestId: 'p1' });
      },
    } as unknown as TtsClient;
    expect(await createTtsProbe(tts)()).toEqual({
      costUsd: 0.0001,
      balanceUsd: 4.2,
      requestId: 'p1',
      characters: 1,
    });
    expect(sent).toEqual([{ text: PROBE_TEXT, speakerId: SPEAKER.id }]);
    await new Promise((resolve) => audio.once('end', resolve));
  });
});

describe('on the TTS emulator (loopback HTTP)', () => {
  let emulator: TtsEmulator | undefined;
  let tts: TtsClient | undefined;
  afterEach(async () => {
    await tts?.close();
    await emulator?.close();
    tts = undefined;
    emulator = undefined;
  });

  async function setUp(balanceUsd: number) {
    emulator = await startTtsEmulator({ balanceUsd, pricePerCharUsd: 0.0001, msPerChar: 1, speed: Infinity });
    tts = createTtsClient({
      baseUrl: emulator.baseUrl,
      apiKey: emulator.apiKey,
      form: 'current',
      logger: silentLogger,
      retry: { maxRetries: 0 },
    });
    const client = tts;
    const generate = async (request: SpeechRequest, signal: AbortSignal) => {
      const generated = await client.generate({ text: request.text, speakerId: request.speaker.id, signal });
      generated.audio.resume();
      return generated;
    };
    return { emulator, tts: client, generate };
  }

  it('fifty concurrent requests near the floor, on a fresh database: the balance ends at or above it', async () => {
    const { emulator, generate } = await setUp(0.535);
    const { guard } = await makeGuard();
    const synthesize = budgetedSynthesize(guard, generate).synthesize;
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        synthesize(speech('x'.repeat(100), `m${i}`), new AbortController().signal, `g${i % 3}`).then(
          () => 'spoken',
          (error: unknown) => (error instanceof BudgetRefusedError ? error.refusal.kind : String(error)),
        ),
      ),
    );
    console.log('fifty concurrent:', JSON.stringify(countBy(outcomes)), 'final balance', emulator.balanceUsd);
    expect(outcomes.filter((o) => o === 'spoken')).toHaveLength(3);
    expect(emulator.balanceUsd).toBeGreaterThanOrEqual(0.5);
    let recorded = 0;
    for (const g of ['g0', 'g1', 'g2']) recorded += (await guard.spendToday(g)).usd;
    expect(recorded).toBeCloseTo(emulator.totalChargedUsd(), 9);
  });

  it('a 402 blocks at once; nothing more reaches the service; recheck after a top-up resumes', async () => {
    const { emulator, tts, generate } = await setUp(10);
    const { guard } = await makeGuard();
    const synthesize = budgetedSynthesize(guard, generate).synthesize;
    const signal = new AbortController().signal;
    await synthesize(speech('hello there'), signal, 'g1');
    emulator.balanceUsd = 0.001; // spent elsewhere: Herald's figure is stale
    await expect(synthesize(speech('x'.repeat(100)), signal, 'g1')).rejects.toBeInstanceOf(
      TtsInsufficientBalanceError,
    );
    const requestsSoFar = emulator.requests.length;
    await expect(synthesize(speech('hi'), signal, 'g1')).rejects.toBeInstanceOf(BudgetRefusedError);
    expect(emulator.requests.length).toBe(requestsSoFar);

    emulator.balanceUsd = 3;
    expect(await guard.recheck(createTtsProbe(tts), { guildId: 'g1', userId: 'owner' })).toEqual({
      kind: 'resumed',
      balanceUsd: 2.9999,
      floorUsd: 0.5,
    });
    await synthesize(speech('hi'), signal, 'g1');
    expect(emulator.balanceUsd).toBeCloseTo(2.9997, 9);
  });
});

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
