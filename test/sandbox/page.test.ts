import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedDurationMs } from '../../emulators/tts/index.ts';
import { type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { waveformPoints } from '../../src/voice-message/index.ts';
import { type Browser, openBrowser } from './browser.ts';

// The sandbox as a visitor uses it: a real Chromium on the page, the page's own Web Audio playing what Herald sent,
// measured in the page (the timeline's pitch and length come from the samples the page scheduled for playback).
// One sandbox and one browser for the file; the tests run in order and build on each other.

let sandbox: Sandbox;
let browser: Browser;
let page: Page;
/** Every WebSocket frame and HTTP body the page received, to look for secrets in. */
const received: string[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, log: () => {} });
  browser = await openBrowser();
  page = browser.page;
  page.on('websocket', (socket) =>
    socket.on('framereceived', ({ payload }) => {
      if (typeof payload === 'string') received.push(payload);
    }),
  );
  page.on('response', (response) => {
    response.text().then(
      (text) => received.push(text),
      () => {},
    );
  });
  await page.goto(sandbox.url);
  await page.click('#sound');
  await page.waitForSelector('#sound:has-text("Sound on")');
  await page.waitForSelector('#speaking:has-text("Herald is not in voice")');
});
afterAll(async () => {
  await browser?.close();
  await sandbox?.close();
});

const BELLA = 220; // the first voice listed, Herald's fallback
const ADAM = 330;

async function be(name: string): Promise<void> {
  const value = await page.locator('#me option', { hasText: name }).getAttribute('value');
  await page.selectOption('#me', value ?? '');
}

/** Runs a slash command from the page's command form. */
async function slash(
  command: string,
  options: Record<string, string> = {},
  subcommand?: string,
): Promise<void> {
  await page.selectOption('#command', command);
  if (subcommand) await page.selectOption('#subcommand', subcommand);
  for (const [name, value] of Object.entries(options)) {
    const field = page.locator(`#options [name="${name}"]`);
    if ((await field.evaluate((node) => node.tagName)) === 'SELECT') await field.selectOption(value);
    else await field.fill(value);
  }
  await page.click('#run');
}

/** Waits for the timeline to hold `count` utterances and returns the newest, as the page measured it. */
async function heard(count: number): Promise<{ hz: number; ms: number; voice: string }> {
  await page
    .locator('#timeline li')
    .nth(count - 1)
    .waitFor({ timeout: 30_000 });
  const newest = await page
    .locator('#timeline li')
    .first()
    .evaluate((li) => ({ ...li.dataset }));
  return { hz: Number(newest.hz), ms: Number(newest.ms), voice: newest.voice ?? '' };
}

/** The newest message shown in the current channel. */
async function lastMessage(containing: string | RegExp): Promise<string> {
  const message = page.locator('#messages .message', { hasText: containing }).last();
  await message.waitFor({ timeout: 20_000 });
  return message.innerText();
}

function timelineCount(): Promise<number> {
  return page.locator('#timeline li').count();
}

describe('the sandbox page', () => {
  it('plays /speak hello from a plain member in voice in the default voice, for the length its text implies, and shows the ephemeral reply', async () => {
    await be('Bob Member');
    await slash('speak', { text: 'hello' });
    const reply = await lastMessage('Speaking now as Bella');
    expect(reply).toContain('Only visible to you');
    expect(reply).toContain('Bob Member used /speak text: hello');
    const utterance = await heard(1);
    expect(utterance.voice).toBe('Bella');
    expect(utterance.hz).toBeGreaterThan(BELLA - 5);
    expect(utterance.hz).toBeLessThan(BELLA + 5);
    expect(Math.abs(utterance.ms - expectedDurationMs('hello'))).toBeLessThan(45);
    await page.waitForSelector('#herald-in-voice');
    // The level meter's analyser sits in the audio graph before the speakers: it saw the tone being rendered.
    const peak = Number(await page.locator('#meter-fill').getAttribute('data-peak'));
    expect(peak).toBeGreaterThan(0.05);
    // The answer was Bob's alone.
    await be('Ada Admin');
    expect(await page.locator('#messages .message', { hasText: 'Speaking now as Bella' }).count()).toBe(0);
    await be('Bob Member');
  });

  it('reads aloud a message written in #general (auto-read)', async () => {
    const before = await timelineCount();
    const text = 'the cake is in the kitchen';
    await page.fill('#message-input', text);
    await page.press('#message-input', 'Enter');
    await page.locator('#messages .message', { hasText: text }).waitFor();
    const utterance = await heard(before + 1);
    expect(utterance.voice).toBe('Bella');
    expect(await page.locator('#timeline li').first().innerText()).toContain(text);
    const request = sandbox.ttsEmulator?.requests.at(-1);
    const spoken = String((request?.body as { text?: string } | undefined)?.text);
    expect(spoken).toContain(text);
    expect(Math.abs(utterance.ms - expectedDurationMs(spoken))).toBeLessThan(45);
  });

  it('lets the admin set the server’s voice through autocomplete; the next /speak is heard in it', async () => {
    await be('Ada Admin');
    await page.selectOption('#command', 'voice-set');
    await page.fill('#options [name="speaker"]', 'Ad');
    const choice = page.locator('[data-choices="speaker"] button', { hasText: 'Adam' });
    await choice.waitFor();
    await choice.dispatchEvent('mousedown');
    await page.selectOption('#options [name="scope"]', 'server');
    await page.click('#run');
    await lastMessage(/Adam/);

    await be('Bob Member');
    const before = await timelineCount();
    await slash('speak', { text: 'hello again' });
    await lastMessage('Speaking now as Adam');
    const utterance = await heard(before + 1);
    expect(utterance.voice).toBe('Adam');
    expect(Math.abs(utterance.hz - ADAM)).toBeLessThan(5);
    expect(Math.abs(utterance.ms - expectedDurationMs('hello again'))).toBeLessThan(45);
  });

  it('pages /voices with its buttons', async () => {
    await slash('voices');
    const first = await lastMessage('Bella');
    expect(first).not.toContain('Pia');
    await page.locator('#messages .message', { hasText: 'Bella' }).last().locator('button').last().click();
    await page.locator('#messages .message', { hasText: 'Pia' }).waitFor();
  });

  it('moves a member between voice channels', async () => {
    await page.selectOption('[aria-label="Voice channel of Cleo Away"]', { label: '🔊 Gaming' });
    await page.locator('[data-voice-channel="Gaming"]', { hasText: 'Cleo Away' }).waitFor();
    const gaming = sandbox.world.voiceChannels.find((channel) => channel.name === 'Gaming');
    const cleo = sandbox.world.members.find((member) => member.name === 'Cleo Away');
    expect(gaming && sandbox.world.guild.voiceMembers(gaming)).toEqual([cleo?.id]);
    // Dragging Herald there: it follows, and Bob, left in the Lounge, is told he does not hear it.
    await page.selectOption('[aria-label="Voice channel of Herald"]', { label: '🔊 Gaming' });
    await page.locator('[data-voice-channel="Gaming"] #herald-in-voice').waitFor();
    await page.locator('#listen-hint', { hasText: 'You are not in Gaming' }).waitFor();
    await page.selectOption('[aria-label="Voice channel of Herald"]', { label: '🔊 Lounge' });
    await page.locator('[data-voice-channel="Lounge"] #herald-in-voice').waitFor();
  });

  it('injects a 503 from the service panel: Herald retries, the ledger shows the uncharged 503 and the paid 200', async () => {
    const before = await timelineCount();
    await page.click('[data-fault="503"]');
    await page.locator('#injected', { hasText: '503' }).waitFor();
    await slash('speak', { text: 'retry me' });
    await heard(before + 1);
    const rows = page.locator('#ledger tr[data-status]');
    await page.locator('#ledger tr[data-status="503"]').waitFor();
    const statuses = await rows.evaluateAll((trs) =>
      trs.slice(0, 2).map((tr) => tr.getAttribute('data-status')),
    );
    expect(statuses).toEqual(['200', '503']);
    const charged = await rows.evaluateAll((trs) =>
      trs.slice(0, 2).map((tr) => tr.lastElementChild?.textContent),
    );
    expect(charged[1]).toBe('$0.00');
    expect(charged[0]).not.toBe('$0.00');
  });

  it('shows /speak voice-message:true as a voice message bubble with its waveform, which plays in the page', async () => {
    await be('Bob Member');
    const text = 'a voice message for later';
    await slash('speak', { text, 'voice-message': 'true' });
    await lastMessage('Sent a voice message as Adam');
    const bubble = page.locator('#messages .voice-message').last();
    await bubble.waitFor({ timeout: 20_000 });
    // One bar per 100 ms of audio, as Discord's clients draw it.
    const points = Number(await bubble.locator('.waveform').getAttribute('data-points'));
    expect(points).toBe(waveformPoints(expectedDurationMs(text) / 1000));
    expect(await bubble.getAttribute('data-state')).toBe('ready');
    await bubble.locator('button.play').click();
    const played = page.locator('#messages .voice-message[data-state="played"]').last();
    await played.waitFor({ timeout: 20_000 });
    // The page decoded the Ogg Opus itself: as long as the service's audio.
    const decodedSecs = Number(await played.getAttribute('data-decoded-secs'));
    expect(Math.abs(decodedSecs * 1000 - expectedDurationMs(text))).toBeLessThan(50);
  });

  it('lets a moderator server-mute Herald mid-queue (nothing paid) and unmute it (heard); on the stage Herald asks to speak and is heard once invited', async () => {
    const requests = () => sandbox.ttsEmulator?.requests.filter((r) => r.method === 'POST').length ?? 0;
    await be('Bob Member');
    // Discord server-mutes only a member in voice: Herald speaks first.
    const before = (await timelineCount()) + 1;
    await slash('speak', { text: 'ready' });
    await heard(before);
    expect(await page.locator('#mute-herald').isDisabled()).toBe(true);
    await be('Ada Admin');
    await page.click('#mute-herald');
    await page.locator('#mute-herald', { hasText: 'Unmute Herald' }).waitFor();
    await be('Bob Member');
    const paid = requests();
    await slash('speak', { text: 'said while muted' });
    await lastMessage('Bob Member used /speak text: said while muted');
    await page.locator('#herald-in-voice .badge', { hasText: 'server-muted' }).waitFor();
    await lastMessage('A moderator server-muted me');
    expect(requests()).toBe(paid);
    await be('Ada Admin');
    await page.click('#mute-herald');
    await page.locator('#herald-in-voice .badge').waitFor({ state: 'detached' });
    await be('Bob Member');
    expect((await heard(before + 1)).ms).toBeGreaterThan(0);
    expect(await page.locator('#timeline li').first().innerText()).toContain('said while muted');

    // The stage: Herald joins its audience, raises its hand, is paid nothing until Ada invites it to speak.
    await slash('leave');
    await page.locator('#herald-in-voice').waitFor({ state: 'detached' });
    await page.selectOption('[aria-label="Voice channel of Bob Member"]', { label: '🎙 Town Hall' });
    await page.locator('[data-voice-channel="Town Hall"]', { hasText: 'Bob Member' }).waitFor();
    const onStage = requests();
    await slash('speak', { text: 'hello from the stage' });
    await lastMessage('a stage moderator must invite me');
    await page
      .locator('[data-voice-channel="Town Hall"] #herald-in-voice .badge', { hasText: 'asked to speak' })
      .waitFor();
    expect(requests()).toBe(onStage);
    await be('Ada Admin');
    await page.click('#invite-herald');
    await be('Bob Member');
    await heard(before + 2);
    expect(await page.locator('#timeline li').first().innerText()).toContain('hello from the stage');
    expect(requests()).toBe(onStage + 1);
    await page.selectOption('[aria-label="Voice channel of Bob Member"]', { label: '🔊 Lounge' });
  });

  it('refuses /speak with the budget sentence once the balance is drained below the floor, and charges nothing', async () => {
    const charged = sandbox.ttsEmulator?.totalChargedUsd();
    await page.click('#drain');
    await page.waitForSelector('#balance[data-usd="0"]');
    await slash('speak', { text: 'hello' });
    await lastMessage('out of credit');
    await slash('speak', { text: 'hello' });
    await lastMessage('Herald has stopped speaking');
    // Auto-read, refused too, says so in the channel: a message Herald posts for everyone.
    await page.fill('#message-input', 'anyone there?');
    await page.press('#message-input', 'Enter');
    const notice = await lastMessage('Auto-read could not speak a message');
    expect(notice).not.toContain('Only visible to you');
    expect(sandbox.ttsEmulator?.totalChargedUsd()).toBe(charged);
    expect(await page.locator('#charged').getAttribute('data-usd')).toBe(String(charged));
  });

  it('never shows the page a secret', async () => {
    const secrets = [sandbox.discord.token, sandbox.ttsEmulator?.apiKey ?? 'unset'];
    received.push(await page.content());
    for (const text of received) for (const secret of secrets) expect(text).not.toContain(secret);
    expect(received.length).toBeGreaterThan(10);
  });
});
