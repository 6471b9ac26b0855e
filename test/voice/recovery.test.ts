import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import type { PersistedSession, VoiceStateStore } from '../../src/storage/voice-state.ts';
import type { SessionSnapshot } from '../../src/voice/manager.ts';
import type { SpeechRequest } from '../../src/voice/queue.ts';
import { persistSnapshots } from '../../src/voice/recovery.ts';

function request(text: string): SpeechRequest {
  return {
    text,
    speaker: { id: 'v1', name: 'Ada' } as SpeechRequest['speaker'],
    requestedBy: { id: 'u1', name: 'Member' },
    onFailure: () => {},
  };
}

function snapshot(...texts: string[]): SessionSnapshot {
  return { channelId: 'c1', announceChannelId: 't1', queue: texts.map(request) };
}

/** A store that records each change written and each transaction, and fails the transactions it is told to. */
function recordingStore() {
  const writes: (PersistedSession | string)[] = [];
  const transactions: number[] = [];
  let failNext = 0;
  const store: VoiceStateStore = {
    async remove(guildId) {
      writes.push(`remove ${guildId}`);
    },
    async saveAll(changes) {
      if (failNext > 0) {
        failNext--;
        throw new Error('disk full');
      }
      transactions.push(changes.length);
      for (const { guildId, session } of changes) writes.push(session ?? `remove ${guildId}`);
    },
    async load() {
      return [];
    },
  };
  return { store, writes, transactions, failNext: () => failNext++ };
}

/** Holds the store's next write, as a busy database would, until the returned function lets it (and the rest) through. */
function holdFirstWrite(store: VoiceStateStore): () => void {
  const saveAll = store.saveAll;
  let held = (): void => {};
  store.saveAll = (changes) =>
    new Promise<void>((resolve) => {
      held = () => void saveAll(changes).then(resolve);
    });
  return () => {
    store.saveAll = saveAll;
    held();
  };
}

const texts = (write: PersistedSession | string) =>
  typeof write === 'string' ? write : write.queue.map((u) => u.text);
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));
const logger = createLogger({ level: 'error', write: () => {} });

describe('persistSnapshots', () => {
  it('writes a session once while it stays the same, and again when it changes or was removed', async () => {
    const { store, writes } = recordingStore();
    const persist = persistSnapshots(store, logger);
    persist('g1', snapshot('hello'));
    persist('g1', snapshot('hello'));
    await settle();
    persist('g1', snapshot('hello'));
    persist('g1', snapshot());
    await settle();
    persist('g1', snapshot());
    persist('g1', null);
    await settle();
    persist('g1', snapshot());
    await settle();
    expect(writes.map(texts)).toEqual([['hello'], [], 'remove g1', []]);
  });

  it('writes only the newest of the snapshots offered while a write waits its turn', async () => {
    const { store, writes } = recordingStore();
    const release = holdFirstWrite(store);
    const persist = persistSnapshots(store, logger);
    persist('g1', snapshot('one'));
    await settle();
    persist('g1', snapshot('one', 'two'));
    persist('g1', null);
    persist('g1', snapshot('two'));
    persist('g2', snapshot('elsewhere'));
    release();
    await settle();
    const of = (guildId: string) =>
      writes.filter((write) => typeof write !== 'string' && write.guildId === guildId).map(texts);
    expect(of('g1')).toEqual([['one'], ['two']]);
    // Another server's snapshot is its own: written, not taken for the newest of g1's.
    expect(of('g2')).toEqual([['elsewhere']]);
    expect(writes).toHaveLength(3);
  });

  it('writes what one task offers in one transaction, and what comes while it is written in the next', async () => {
    const { store, writes, transactions } = recordingStore();
    const release = holdFirstWrite(store);
    const persist = persistSnapshots(store, logger);
    // A rush: fifty servers' sessions change in one task.
    for (let i = 0; i < 50; i++) persist(`g${i}`, snapshot(`hello ${i}`));
    await settle();
    // While that transaction waits for the database, each of them changes again, twice.
    for (let i = 0; i < 50; i++) persist(`g${i}`, snapshot(`hello ${i}`, 'again'));
    for (let i = 0; i < 50; i++) persist(`g${i}`, snapshot('again'));
    release();
    await settle();
    expect(transactions).toEqual([50, 50]);
    expect(writes.slice(50).map(texts)).toEqual(Array.from({ length: 50 }, () => ['again']));
  });

  it('keeps servers apart', async () => {
    const { store, writes } = recordingStore();
    const persist = persistSnapshots(store, logger);
    persist('g1', snapshot('hello'));
    persist('g2', snapshot('hello'));
    await settle();
    expect(writes.map((write) => (typeof write === 'string' ? write : write.guildId))).toEqual(['g1', 'g2']);
  });

  it('writes a snapshot again when its last write failed', async () => {
    const { store, writes, failNext } = recordingStore();
    const persist = persistSnapshots(store, logger);
    failNext();
    persist('g1', snapshot('hello'));
    await settle();
    expect(writes).toEqual([]);
    persist('g1', snapshot('hello'));
    await settle();
    expect(writes).toHaveLength(1);
  });
});
