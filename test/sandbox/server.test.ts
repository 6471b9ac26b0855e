import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';
import { type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { statusForHost } from '../support/http.ts';

// The sandbox with TTS_BASE_URL and TTS_API_KEY set: the "real" service here is a TTS emulator the sandbox does not
// own, so the test can see what was charged and that the key stayed on the server.

let service: TtsEmulator;
let sandbox: Sandbox;
beforeAll(async () => {
  service = await startTtsEmulator({ speed: 8 });
  sandbox = await startSandbox({
    port: 0,
    log: () => {},
    env: { TTS_BASE_URL: service.baseUrl, TTS_API_KEY: service.apiKey, BUDGET_FLOOR_USD: '2' },
  });
});
afterAll(async () => {
  await sandbox?.close();
  await service?.close();
});

async function api(action: string, body: object = {}): Promise<{ status: number; text: string }> {
  const response = await fetch(new URL(`/api/${action}`, sandbox.url), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

describe('the sandbox with a real TTS service configured', () => {
  it('speaks through it with the budget guard on, and never hands the page its key', async () => {
    expect(sandbox.tts).toBe('real');
    expect(sandbox.ttsEmulator).toBeUndefined();
    const state = JSON.parse((await api('state')).text);
    expect(state.service).toEqual({
      kind: 'real',
      host: new URL(service.baseUrl).host,
      floorUsd: 2,
      balanceUsd: null,
      blocked: null,
      ledger: [],
    });
    // Everything the page is sent over its WebSocket while Herald speaks (state as text, audio as binary).
    const socket = new WebSocket(new URL('/ws', sandbox.url.replace(/^http/, 'ws')), {
      origin: new URL(sandbox.url).origin,
    });
    const sent: Buffer[] = [];
    socket.on('message', (data: Buffer) => sent.push(Buffer.from(data)));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const bob = state.members.find((m: { name: string }) => m.name === 'Bob Member');
    const general = state.channels.find((c: { name: string }) => c.name === 'general');
    expect(
      (await api('slash', { as: bob.id, channelId: general.id, command: 'speak', options: { text: 'hi' } }))
        .status,
    ).toBe(200);
    await sandbox.discord.voice(sandbox.world.guild).untilSilent({ quietMs: 300 });
    expect(service.totalChargedUsd()).toBeGreaterThan(0);
    const after = (await api('state')).text;
    expect(after).toContain('Speaking now as Bella');
    // Herald's own ledger: the real service's charges are known only from its response headers.
    const { service: panel } = JSON.parse(after);
    expect(panel.balanceUsd).toBe(service.balanceUsd);
    expect(panel.ledger).toEqual([
      expect.objectContaining({ userId: bob.id, characters: 2, costUsd: service.totalChargedUsd() }),
    ]);
    expect(after).not.toContain(service.apiKey);
    socket.close();
    const text = sent.filter((frame) => frame[0] === 0x7b).map((frame) => frame.toString('utf8'));
    expect(text.some((frame) => frame.includes('Speaking now as Bella'))).toBe(true);
    expect(sent.some((frame) => frame.includes(service.apiKey))).toBe(false);
    // The emulated account's controls are not offered for a real one.
    expect((await api('service', { action: 'drain' })).status).toBe(400);
  });

  it('answers only requests addressed to its own host name, and only JSON posts', async () => {
    expect(await statusForHost(sandbox.url, 'rebound.example')).toBe(403);
    const form = await fetch(new URL('/api/move', sandbox.url), {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'memberId=1',
    });
    expect(form.status).toBe(405);
  });

  it('lets only a moderator mute Herald, only in voice, and invite it only from a stage’s audience', async () => {
    const { bot } = JSON.parse((await api('state')).text);
    const bob = sandbox.world.members.find((m) => m.name === 'Bob Member');
    const ada = sandbox.world.admin;
    const guild = sandbox.world.guild;
    expect(guild.botVoiceChannelId()).not.toBeNull();
    const asBob = await api('moderate', { as: bob?.id, act: 'mute' });
    expect(asBob).toEqual({ status: 400, text: expect.stringContaining('Only a moderator') });
    expect(guild.voiceFlags(guild.bot).muted).toBe(false);
    expect((await api('moderate', { as: ada.id, act: 'invite' })).text).toContain('not in a stage');
    expect((await api('moderate', { as: ada.id, act: 'mute' })).status).toBe(200);
    expect(JSON.parse((await api('state')).text).bot).toEqual({ ...bot, muted: true });
    expect((await api('moderate', { as: ada.id, act: 'unmute' })).status).toBe(200);
    await api('slash', { as: ada.id, channelId: sandbox.world.general.id, command: 'leave' });
    for (let i = 0; i < 100 && guild.botVoiceChannelId() !== null; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect((await api('moderate', { as: ada.id, act: 'mute' })).text).toContain(
      'only a member in a voice channel',
    );
  });
});
