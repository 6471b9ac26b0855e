import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type DiscordEmulator, startDiscordEmulator } from '../../../emulators/discord/index.ts';

/** Every packet a bare gateway client received, and how its socket ended. */
interface Raw {
  readonly packets: { op: number; s?: number; t?: string; d: unknown }[];
  /** Resolves with the first packet matching, already received or coming. */
  until(match: (p: Raw['packets'][number]) => boolean): Promise<Raw['packets'][number]>;
  /** Closes with `code`, or with `'drop'` ends the TCP connection without a close frame. */
  close(code?: number | 'drop'): Promise<void>;
}

const INTENTS = (1 << 0) | (1 << 9) | (1 << 15);

/** Opens a gateway connection that, on HELLO, sends `first` (an IDENTIFY or a RESUME payload). */
async function open(e: DiscordEmulator, first: { op: number; d: Record<string, unknown> }): Promise<Raw> {
  const ws = new WebSocket(`${e.gatewayUrl}?v=10&encoding=json`);
  const packets: Raw['packets'] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (raw) => {
    const packet = JSON.parse(String(raw)) as Raw['packets'][number];
    if (packet.op === 10) ws.send(JSON.stringify({ op: first.op, d: { token: e.token, ...first.d } }));
    packets.push(packet);
    for (const wake of [...waiters]) wake();
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    packets,
    until: (match) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no such packet within 3 s')), 3000);
        const check = (): void => {
          const found = packets.find(match);
          if (!found) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
        };
        waiters.add(check);
        check();
      }),
    close: (code) =>
      new Promise<void>((resolve) => {
        if (ws.readyState === ws.CLOSED) return resolve();
        ws.once('close', () => resolve());
        if (code === 'drop') ws.terminate();
        else ws.close(code);
      }),
  };
}

const identify = (shard: [number, number]) => ({ op: 2, d: { intents: INTENTS, properties: {}, shard } });
const resume = (sessionId: string, seq: number) => ({ op: 6, d: { session_id: sessionId, seq } });
const lastSeq = (raw: Raw): number => Math.max(0, ...raw.packets.map((p) => p.s ?? 0));

describe('the Discord emulator keeps gateway sessions as Discord does', () => {
  let emulator: DiscordEmulator | undefined;
  afterEach(async () => {
    await emulator?.close();
    emulator = undefined;
  });

  /** An emulator with one guild and shard 0 of 1 identified; returns its session id and the socket. */
  const started = async () => {
    const e = await startDiscordEmulator();
    emulator = e;
    const guild = e.createGuild({ name: 'g' });
    const text = guild.addTextChannel('chat');
    const member = guild.addMember({ name: 'ada' });
    const first = await open(e, identify([0, 1]));
    const ready = await first.until((p) => p.t === 'READY');
    await e.untilReady();
    return {
      e,
      first,
      sessionId: (ready.d as { session_id: string }).session_id,
      say: (s: string) => e.sendMessage(member, text, s),
    };
  };

  for (const code of [1000, 1001]) {
    it(`ends the session on a close ${code}: a later RESUME gets op 9 d:false`, async () => {
      const { e, first, sessionId } = await started();
      await first.close(code);
      expect(e.gatewaySessions()).toEqual([]);
      const again = await open(e, resume(sessionId, lastSeq(first)));
      expect((await again.until((p) => p.op === 9)).d).toBe(false);
      expect(e.resumes).toEqual([]);
      await again.close();
    });
  }

  it('keeps a session closed with another code resumable, replays what it missed with their sequence, then RESUMED', async () => {
    const { e, first, sessionId, say } = await started();
    const seq = lastSeq(first);
    await first.close(4200);
    say('while away one');
    say('while away two');
    const again = await open(e, resume(sessionId, seq));
    await again.until((p) => p.t === 'RESUMED');
    const dispatches = again.packets.filter((p) => p.op === 0);
    expect(dispatches.map((p) => p.t)).toEqual(['MESSAGE_CREATE', 'MESSAGE_CREATE', 'RESUMED']);
    expect(dispatches.map((p) => p.s)).toEqual([seq + 1, seq + 2, seq + 3]);
    expect(dispatches.map((p) => (p.d as { content?: string } | null)?.content)).toEqual([
      'while away one',
      'while away two',
      undefined,
    ]);
    expect(e.gatewayCounts(0)).toEqual({ identifies: 1, resumes: 1 });
    expect(e.resumes.map((r) => r.replayed)).toEqual([2]);
    await again.close();
  });

  it('keeps a dropped socket (no close frame) resumable', async () => {
    const { e, first, sessionId } = await started();
    const seq = lastSeq(first);
    await first.close('drop');
    const again = await open(e, resume(sessionId, seq));
    await again.until((p) => p.t === 'RESUMED');
    expect(e.gatewayCounts(0)).toEqual({ identifies: 1, resumes: 1 });
    await again.close();
  });

  it('invalidates a session on demand, even while its bot is away: the RESUME gets op 9 d:false', async () => {
    const { e, first, sessionId } = await started();
    const seq = lastSeq(first);
    await first.close(4200);
    e.faults.invalidateSession(false, 0);
    const again = await open(e, resume(sessionId, seq));
    expect((await again.until((p) => p.op === 9)).d).toBe(false);
    expect(e.gatewayCounts(0)).toEqual({ identifies: 1, resumes: 0 });
    await again.close();
  });

  it('records each IDENTIFY with its bucket, shard_id % max_concurrency', async () => {
    const e = await startDiscordEmulator({ maxConcurrency: 2 });
    emulator = e;
    e.createGuild({ name: 'g' });
    const sockets = [];
    for (const id of [0, 1, 2, 3]) {
      const raw = await open(e, identify([id, 4]));
      await raw.until((p) => p.t === 'READY');
      sockets.push(raw);
    }
    expect(e.identifies.map((i) => [i.shard?.[0], i.bucket])).toEqual([
      [0, 0],
      [1, 1],
      [2, 0],
      [3, 1],
    ]);
    for (const raw of sockets) await raw.close();
  });

  it('ends a session left away longer than its resume window', async () => {
    const e = await startDiscordEmulator({ gatewayResumeWindowMs: 0 });
    emulator = e;
    e.createGuild({ name: 'g' });
    const first = await open(e, identify([0, 1]));
    const ready = await first.until((p) => p.t === 'READY');
    await first.close(4200);
    const again = await open(e, resume((ready.d as { session_id: string }).session_id, lastSeq(first)));
    expect((await again.until((p) => p.op === 9)).d).toBe(false);
    expect(e.gatewaySessions()).toEqual([]);
    await again.close();
  });
});
