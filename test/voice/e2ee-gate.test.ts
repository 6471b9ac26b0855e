import { EventEmitter } from 'node:events';
import {
  type AudioPlayer,
  AudioPlayerStatus,
  NetworkingStatusCode,
  type VoiceConnection,
  VoiceConnectionStatus,
} from '@discordjs/voice';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { awaitE2eeReady, guardE2ee } from '../../src/voice/e2ee-gate.ts';

interface FakeDave {
  protocolVersion: number;
  session: { ready: boolean; getUserIds?: () => string[] } | undefined;
  lastTransitionId: number | undefined;
  pendingTransitions: Map<number, number>;
  recoverFromInvalidTransition: ReturnType<typeof vi.fn>;
}

/** A VoiceConnection as far as the gate reads it: its status, its networking state and its DAVE session. */
function fakeConnection(o: { ready?: boolean; dave?: Partial<FakeDave> | null } = {}) {
  const emitter = new EventEmitter();
  const dave: (FakeDave & EventEmitter) | undefined =
    o.dave === null
      ? undefined
      : Object.assign(new EventEmitter(), {
          protocolVersion: 1,
          session: { ready: false },
          lastTransitionId: undefined,
          pendingTransitions: new Map(),
          recoverFromInvalidTransition: vi.fn(),
          ...o.dave,
        });
  let ready = o.ready ?? true;
  const connection = Object.defineProperty(emitter, 'state', {
    get: () =>
      ready
        ? {
            status: VoiceConnectionStatus.Ready,
            networking: { state: { code: NetworkingStatusCode.Ready, dave } },
          }
        : { status: VoiceConnectionStatus.Connecting },
  });
  return {
    connection: connection as unknown as VoiceConnection,
    dave,
    becomeReady(): void {
      ready = true;
      emitter.emit('stateChange');
    },
    transition(id: number): void {
      dave?.pendingTransitions.delete(id);
      emitter.emit('transitioned', id);
    },
  };
}

const others = { othersPresent: () => true, timeoutMs: 6_000 };

describe('awaitE2eeReady', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each([
    ['DAVE declined (protocol version 0)', { dave: { protocolVersion: 0 } }, true, 'not-needed'],
    ['no DAVE session at all', { dave: null }, true, 'not-needed'],
    ['alone in the call, DAVE not ready', {}, false, 'not-needed'],
    ['group established, transition executed', { dave: { session: { ready: true } } }, true, 'ready'],
  ] as const)('%s: resolves at once (%s)', async (_name, setup, present, kind) => {
    const { connection } = fakeConnection(setup);
    const outcome = await awaitE2eeReady(connection, { othersPresent: () => present, timeoutMs: 6_000 });
    expect(outcome.kind).toBe(kind);
  });

  it('waits for the voice connection, then for the transition, before the first frame', async () => {
    const fake = fakeConnection({ ready: false });
    let outcome: string | undefined;
    void awaitE2eeReady(fake.connection, others).then((o) => {
      outcome = o.kind;
    });
    fake.becomeReady();
    await vi.advanceTimersByTimeAsync(100);
    expect(outcome).toBeUndefined();
    // Commit processed: davey is ready, but the transition is still pending until op 22.
    if (!fake.dave) throw new Error('no dave');
    fake.dave.session = { ready: true };
    fake.dave.pendingTransitions.set(1, 1);
    await vi.advanceTimersByTimeAsync(100);
    expect(outcome).toBeUndefined();
    fake.transition(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome).toBe('ready');
  });

  it('does not let a transition the gateway never executes block speech beyond the grace period', async () => {
    const fake = fakeConnection({
      dave: { session: { ready: true }, pendingTransitions: new Map([[0xfffd, 1]]) },
    });
    let outcome: string | undefined;
    void awaitE2eeReady(fake.connection, others).then((o) => {
      outcome = o.kind;
    });
    await vi.advanceTimersByTimeAsync(400);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(200);
    expect(outcome).toBe('ready');
  });

  it('waits for a member who just joined the channel to hold the group, then plays', async () => {
    const group = ['herald', 'ada'];
    const fake = fakeConnection({ dave: { session: { ready: true, getUserIds: () => group } } });
    let outcome: string | undefined;
    void awaitE2eeReady(fake.connection, { ...others, membersPresent: () => ['ada', 'cy'] }).then((o) => {
      outcome = o.kind;
    });
    await vi.advanceTimersByTimeAsync(200);
    expect(outcome).toBeUndefined();
    // Cy's Add is committed and its transition executed.
    group.push('cy');
    fake.transition(4);
    await vi.advanceTimersByTimeAsync(0);
    expect(outcome).toBe('ready');
  });

  it('does not wait beyond the grace period for a member who never joins the group', async () => {
    const fake = fakeConnection({ dave: { session: { ready: true, getUserIds: () => ['herald'] } } });
    let outcome: string | undefined;
    void awaitE2eeReady(fake.connection, { ...others, membersPresent: () => ['cy'] }).then((o) => {
      outcome = o.kind;
    });
    await vi.advanceTimersByTimeAsync(1_400);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(200);
    expect(outcome).toBe('ready');
  });

  it('re-keys once half-way, then gives up at the timeout', async () => {
    const fake = fakeConnection({ dave: { lastTransitionId: 3 } });
    const pending = awaitE2eeReady(fake.connection, others);
    await vi.advanceTimersByTimeAsync(2_900);
    expect(fake.dave?.recoverFromInvalidTransition).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(200);
    expect(fake.dave?.recoverFromInvalidTransition).toHaveBeenCalledWith(3);
    await vi.advanceTimersByTimeAsync(3_000);
    expect((await pending).kind).toBe('timed-out');
    expect(fake.dave?.recoverFromInvalidTransition).toHaveBeenCalledTimes(1);
  });

  it('stops waiting when the last other member leaves', async () => {
    const fake = fakeConnection();
    let present = true;
    const pending = awaitE2eeReady(fake.connection, { othersPresent: () => present, timeoutMs: 6_000 });
    await vi.advanceTimersByTimeAsync(100);
    present = false;
    await vi.advanceTimersByTimeAsync(100);
    expect(await pending).toEqual({ kind: 'not-needed', reason: 'alone' });
  });

  it('stops waiting when the utterance is aborted', async () => {
    const fake = fakeConnection();
    const abort = new AbortController();
    const pending = awaitE2eeReady(fake.connection, { ...others, signal: abort.signal });
    abort.abort();
    expect((await pending).kind).toBe('aborted');
  });
});

/** An AudioPlayer as far as the guard drives it. */
function fakePlayer() {
  const emitter = new EventEmitter();
  let status: AudioPlayerStatus = AudioPlayerStatus.Playing;
  const set = (next: AudioPlayerStatus): boolean => {
    status = next;
    emitter.emit('stateChange');
    return true;
  };
  const player = Object.assign(emitter, {
    pause: vi.fn(() => status === AudioPlayerStatus.Playing && set(AudioPlayerStatus.Paused)),
    unpause: vi.fn(() => status === AudioPlayerStatus.Paused && set(AudioPlayerStatus.Playing)),
    stop: vi.fn(() => set(AudioPlayerStatus.Idle)),
  });
  Object.defineProperty(player, 'state', { get: () => ({ status }) });
  return { player: player as unknown as AudioPlayer, status: () => status };
}

describe('guardE2ee', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('pauses the player when DAVE re-initialises mid-utterance, and resumes after the transition', async () => {
    const fake = fakeConnection({ dave: { session: { ready: true } } });
    const { player, status } = fakePlayer();
    const stop = guardE2ee(fake.connection, player, { othersPresent: () => true, timeoutMs: 6_000 });
    expect(status()).toBe(AudioPlayerStatus.Playing);
    if (!fake.dave) throw new Error('no dave');
    // A re-key: davey is not ready, and the library announces a new key package.
    fake.dave.session = { ready: false };
    fake.dave.emit('keyPackage');
    expect(status()).toBe(AudioPlayerStatus.Paused);
    fake.dave.session = { ready: true };
    fake.dave.pendingTransitions.set(4, 1);
    await vi.advanceTimersByTimeAsync(100);
    expect(status()).toBe(AudioPlayerStatus.Paused);
    fake.transition(4);
    expect(status()).toBe(AudioPlayerStatus.Playing);
    stop();
  });

  it('does not pause when nobody else is in the call, and stops a pause that never ends', async () => {
    const fake = fakeConnection({ dave: { session: { ready: true } } });
    const { player, status } = fakePlayer();
    let present = false;
    guardE2ee(fake.connection, player, { othersPresent: () => present, timeoutMs: 6_000 });
    if (!fake.dave) throw new Error('no dave');
    fake.dave.session = { ready: false };
    fake.dave.emit('keyPackage');
    expect(status()).toBe(AudioPlayerStatus.Playing);
    present = true;
    fake.dave.emit('keyPackage');
    expect(status()).toBe(AudioPlayerStatus.Paused);
    await vi.advanceTimersByTimeAsync(6_100);
    expect(status()).toBe(AudioPlayerStatus.Idle);
  });

  it('does nothing more once removed, even for the event that removed it', () => {
    // The session ends (and removes the guard) from a connection listener added before the guard's: the emitter still
    // calls the guard for that same event, which must neither pause the player nor start watching the DAVE session.
    const fake = fakeConnection({ dave: { session: { ready: true } } });
    const { player, status } = fakePlayer();
    let stop = (): void => {};
    fake.connection.on('stateChange', () => stop());
    stop = guardE2ee(fake.connection, player, { othersPresent: () => true, timeoutMs: 6_000 });
    if (!fake.dave) throw new Error('no dave');
    fake.dave.session = { ready: false };
    fake.becomeReady();
    expect(status()).toBe(AudioPlayerStatus.Playing);
    expect(fake.dave.listenerCount('keyPackage')).toBe(0);
  });
});
