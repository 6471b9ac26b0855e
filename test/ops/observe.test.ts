import { PassThrough } from 'node:stream';
import { Client, RESTEvents, SnowflakeUtil } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { type BudgetStore, createBudgetStore } from '../../src/budget/index.ts';
import { createCacheStore } from '../../src/cache/index.ts';
import { createLogger } from '../../src/log.ts';
import {
  logUtterances,
  noOpsEvents,
  type OpsEvents,
  observeBudgetStore,
  observeCacheStore,
  observeGenerate,
  observeInteractionAnswers,
} from '../../src/ops/index.ts';
import { openDatabase } from '../../src/storage/index.ts';
import { TtsAbortedError, TtsTimeoutError } from '../../src/tts/index.ts';
import type { SpeechRequest } from '../../src/voice/session.ts';

function recorder() {
  const seen: [string, ...unknown[]][] = [];
  const events = Object.fromEntries(
    Object.keys(noOpsEvents).map((name) => [name, (...args: unknown[]) => seen.push([name, ...args])]),
  ) as unknown as OpsEvents;
  return { events, seen };
}

const result = {
  audio: new PassThrough(),
  contentType: 'audio/ogg',
  format: 'opus' as const,
  sampleRate: 48_000,
  durationS: 1,
  costUsd: 0.002,
  balanceUsd: 9,
  requestId: 'req-1',
  attempts: 1,
};
const request: SpeechRequest = {
  text: 'secret member text',
  speaker: { id: 'id', name: 'Bella', voiceKey: 'k', gender: null, languages: null },
  requestedBy: { id: '42', name: 'Bob' },
  onFailure: () => {},
};

describe('observeBudgetStore', () => {
  it('reports each ledger row as charged and each transition into a stop once', async () => {
    const { events, seen } = recorder();
    const store: BudgetStore = observeBudgetStore(
      await createBudgetStore(openDatabase({ kind: 'sqlite', path: ':memory:' })),
      events,
    );
    const entry = {
      kind: 'speech' as const,
      guildId: '1',
      userId: '2',
      characters: 20,
      costUsd: 0.002,
      estimatedCostUsd: null,
      balanceAfterUsd: 0.5,
      requestId: null,
      at: 1,
    };
    const blocked = { ...(await store.account()), blockedSince: 2, blockedReason: 'floor-reached' as const };
    await store.locked(async (tx) => {
      await tx.recordGeneration(entry, 1);
      // A settlement recorded again is not charged again.
      await tx.recordGeneration(entry, 1);
    });
    await store.locked(async (tx) => {
      await tx.recordGeneration({ ...entry, costUsd: null }, 2);
      await tx.saveAccount(blocked);
    });
    // A transaction that rolls back reports nothing.
    await expect(
      store.locked(async (tx) => {
        await tx.recordGeneration(entry, 3);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await store.saveAccount({ ...blocked, blockedSince: null, blockedReason: null });
    await store.saveAccount({ ...blocked, blockedReason: 'service-refused' });
    expect(seen).toEqual([
      ['charged', 20, 0.002],
      ['charged', 20, 0],
      ['budgetStopped', 'floor-reached'],
      ['budgetStopped', 'service-refused'],
    ]);
    expect(await store.ledger()).toHaveLength(2);
  });
});

describe('observeCacheStore', () => {
  it('reports each hit written to the cache ledger as saved, and none whose row could not be written', async () => {
    const { events, seen } = recorder();
    const db = openDatabase({ kind: 'sqlite', path: ':memory:' });
    const store = observeCacheStore(await createCacheStore(db), events);
    const at = Date.UTC(2026, 0, 2, 12);
    await store.recordHit({ guildId: '1', userId: '2', characters: 12, savedUsd: 0.0024, at });
    await db.close();
    await expect(
      store.recordHit({ guildId: '1', userId: '2', characters: 5, savedUsd: 0.001, at }),
    ).rejects.toThrow();
    expect(seen).toEqual([['cacheSaved', 12, 0.0024]]);
  });
});

describe('observeGenerate', () => {
  it('times the headers, counts failures by code, and never counts an abort', async () => {
    const { events, seen } = recorder();
    await observeGenerate(async () => result, events)();
    await expect(
      observeGenerate(async () => Promise.reject(new TtsTimeoutError('first-byte', 'slow')), events)(),
    ).rejects.toThrow('slow');
    await expect(
      observeGenerate(async () => Promise.reject(new TtsAbortedError()), events)(),
    ).rejects.toThrow();
    await expect(observeGenerate(async () => Promise.reject(new Error('?')), events)()).rejects.toThrow();
    expect(seen.map(([name, arg]) => [name, typeof arg === 'number' ? 'n' : arg])).toEqual([
      ['ttsFirstByte', 'n'],
      ['ttsError', 'TTS_TIMEOUT'],
      ['ttsError', 'OTHER'],
    ]);
  });
});

describe('logUtterances', () => {
  it('logs each utterance with its server and its own id, never its text', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line)) });
    const synthesize = logUtterances(async () => result, logger);
    const signal = new AbortController().signal;
    await synthesize(request, signal, '111');
    await logUtterances(async () => Promise.reject(new Error('boom')), logger)(request, signal, '222').catch(
      () => {},
    );
    expect(lines.map((line) => [line.msg, line.guild, line.utterance])).toEqual([
      ['utterance synthesis started', '111', 'u1'],
      ['utterance audio arriving', '111', 'u1'],
      ['utterance synthesis started', '222', 'u1'],
      ['utterance synthesis failed', '222', 'u1'],
    ]);
    expect(lines[1]).toMatchObject({ requestId: 'req-1', costUsd: 0.002 });
    expect(JSON.stringify(lines)).not.toContain('secret member text');
  });
});

describe('observeInteractionAnswers', () => {
  it('reports each first answer by how Discord took it, timed from the interaction id, and nothing else', () => {
    const { events, seen } = recorder();
    const client = new Client({ intents: [] });
    observeInteractionAnswers(client, events);
    const now = Date.now();
    const id = (ageMs: number) => SnowflakeUtil.generate({ timestamp: now - ageMs }).toString();
    const respond = (path: string, status: number) =>
      client.rest.emit(
        RESTEvents.Response,
        { method: 'POST', path, route: '', data: {}, options: {}, retries: 0 } as never,
        { ok: status < 300, status } as never,
      );
    respond(`/interactions/${id(400)}/secret-token/callback`, 204);
    respond(`/interactions/${id(3_500)}/secret-token/callback`, 404);
    respond(`/interactions/${id(100)}/secret-token/callback`, 400);
    // Edits of a deferral and other routes are not first answers.
    respond('/webhooks/1/secret-token/messages/@original', 200);
    respond('/channels/1/messages', 200);
    expect(seen.map(([name, outcome]) => [name, outcome])).toEqual([
      ['interactionAnswered', 'accepted'],
      ['interactionAnswered', 'expired'],
      ['interactionAnswered', 'refused'],
    ]);
    const [accepted, expired] = seen.map(([, , seconds]) => seconds as number);
    expect(accepted).toBeGreaterThanOrEqual(0.4);
    expect(accepted).toBeLessThan(0.4 + 60);
    expect(expired).toBeGreaterThanOrEqual(3.5);
    expect(JSON.stringify(seen)).not.toContain('secret-token');
    void client.destroy();
  });
});
