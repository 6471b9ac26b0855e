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

/** A store that records each write and each transaction (`apply`), and fails the transactions it is told to. */
function recordingStore() {
  const writes: (PersistedSession | string)[] = [];
  const transactions: number[] = [];
  let failNext = 0;
  const store: VoiceStateStore = {
    async save(session) {
      writes.push(session);
    },
    async remove(guildId) {
      writes.push(`remove ${guildId}`);
    },
    async apply(changes) {
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

const texts = (write: PersistedSession | string) =>
  typeof write === 'string' ? write : write.queue.map((u) => u.text);
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));
const logger = createLogger({ level: 'error', write: () => {} });

describe('persistSnapshots', () => {
  it('writes a session once while it stays the same, and again when it changes or was removed', async () => {
    const { store, writes } = recordingStore();
    const persist = persistSnapshots(store, logger);
    persist.offer('g1', snapshot('hello'));
    persist.offer('g1', snapshot('hello'));
    await settle();
    persist.offer('g1', snapshot('hello'));
    persist.offer('g1', snapshot());
    await settle();
    persist.offer('g1', snapshot());
    persist.offer('g1', null);
    await settle();
    persist.offer('g1', snapshot());
    await settle();
    expect(writes.map(texts)).toEqual([['hello'], [], 'remove g1', []]);
  });

  it('writes only the newest of the snapshots offered while a write waits its turn', async () => {
    const { store, writes } = recordingStore();
    let release = (): void => {};
    const apply = store.apply;
    // The first write is held, as a busy database would hold it.
    store.apply = (changes) =>
      new Promise<void>((resolve) => {
        release = () => void apply(changes).then(resolve);
      });
    const persist = persistSnapshots(store, logger);
    persist.offer('g1', snapshot('one'));
    await settle();
    persist.offer('g1', snapshot('one', 'two'));
    persist.offer('g1', null);
    persist.offer('g1', snapshot('two'));
    persist.offer('g2', snapshot('elsewhere'));
    store.apply = apply;
    release();
    await settle();
    const of = (guildId: string) =>
      writes.filter((write) => typeof write !== 'string' && write.guildId === guildId).map(texts);
    expect(of('g1')).toEqual([['one'], ['two']]);
    // Another server's snapshot is its own: written, not taken for the newest of g1's.
    expect(of('g2')).toEqual([['elsewhere']]);
    expect(writes).toHaveLength(3);
  });

  it('keeps servers apart', async () => {
    const { store, writes } = recordingStore();
    const persist = persistSnapshots(store, logger);
    persist.offer('g1', snapshot('hello'));
    persist.offer('g2', snapshot('hello'));
    await settle();
    expect(writes.map((write) => (typeof write === 'string' ? write : write.guildId))).toEqual(['g1', 'g2']);
  });

  it('writes the servers that change in one turn, and those that change while it writes, in one transaction each', async () => {
    const { store, writes, transactions } = recordingStore();
    const persist = persistSnapshots(store, logger);
    for (let i = 0; i < 250; i++) persist.offer(`g${i}`, snapshot(`hello ${i}`));
    await persist.settled();
    expect(transactions).toEqual([250]);
    let release = (): void => {};
    const apply = store.apply;
    store.apply = (changes) =>
      new Promise<void>((resolve) => {
        store.apply = apply;
        release = () => void apply(changes).then(resolve);
      });
    persist.offer('g0', snapshot());
    await settle();
    // While that write is held, 100 servers change, one of them twice and one back to what it was.
    for (let i = 1; i <= 100; i++) persist.offer(`g${i}`, snapshot());
    persist.offer('g1', snapshot('again'));
    persist.offer('g0', snapshot('hello 0'));
    release();
    await persist.settled();
    expect(transactions).toEqual([250, 1, 101]);
    expect(writes).toHaveLength(352);
    // Each server's newest snapshot is the last written for it.
    const last = new Map<string, PersistedSession>();
    for (const write of writes) if (typeof write !== 'string') last.set(write.guildId, write);
    expect(last.get('g0')?.queue.map((u) => u.text)).toEqual(['hello 0']);
    expect(last.get('g1')?.queue.map((u) => u.text)).toEqual(['again']);
    expect(last.get('g100')?.queue).toEqual([]);
    expect(last.get('g101')?.queue.map((u) => u.text)).toEqual(['hello 101']);
  });

  it('settled() waits for a write offered at any moment while the last one finishes', async () => {
    // Offered 0 to 7 microtasks after a write completes: whichever step the ending writer is at, it is written.
    for (let hops = 0; hops < 8; hops++) {
      const { store, writes } = recordingStore();
      const persist = persistSnapshots(store, logger);
      const apply = store.apply;
      let offered: Promise<void> | undefined;
      store.apply = async (changes) => {
        store.apply = apply;
        await apply(changes);
        let later = Promise.resolve();
        for (let i = 0; i < hops; i++) later = later.then(() => {});
        offered = later.then(() => persist.offer('g2', snapshot('late')));
      };
      persist.offer('g1', snapshot('first'));
      await persist.settled();
      await offered;
      await persist.settled();
      expect(writes.map(texts), `offered ${hops} microtasks after`).toEqual([['first'], ['late']]);
    }
  });

  it('writes a snapshot again when its last write failed', async () => {
    const { store, writes, failNext } = recordingStore();
    const persist = persistSnapshots(store, logger);
    failNext();
    persist.offer('g1', snapshot('hello'));
    await settle();
    expect(writes).toEqual([]);
    persist.offer('g1', snapshot('hello'));
    await settle();
    expect(writes).toHaveLength(1);
  });
});
