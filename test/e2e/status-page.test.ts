import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd } from '../../src/budget/index.ts';
import { createWorld, type World } from './harness.ts';

// The status page in a real browser: Debian's Chromium, headless, driven by playwright-core, on a fresh profile
// that can reach nothing but the loopback address Herald serves on.

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'status-page-test-token-0123456789';
/** Set HERALD_SCREENSHOT=1 to refresh docs/status.png (the README's picture); otherwise it goes to a temp dir. */
const SCREENSHOT = process.env.HERALD_SCREENSHOT
  ? join(import.meta.dirname, '../../docs/status.png')
  : undefined;

let world: World;
let context: BrowserContext;
let page: Page;
let profile: string;
const blocked: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  world = await createWorld({
    env: { METRICS_PORT: '0', METRICS_TOKEN: TOKEN, BUDGET_FLOOR_USD: '2', BUDGET_WARN_USD: '5' },
  });
  profile = mkdtempSync(join(tmpdir(), 'herald-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 900, height: 1000 },
  });
  // Nothing but Herald's own loopback endpoint is reachable.
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1') return route.continue();
    blocked.push(url.href);
    return route.abort();
  });
  page = context.pages()[0] ?? (await context.newPage());
});
afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await world?.close();
});

const opsUrl = (): string => world.herald().ops?.url ?? '';

describe('the status page', () => {
  it('answers 401 without the token, for the page and for /metrics; a bearer token opens both', async () => {
    for (const path of ['/', '/metrics']) {
      expect((await fetch(`${opsUrl()}${path}`)).status).toBe(401);
      expect(
        (
          await fetch(`${opsUrl()}${path}`, {
            headers: { authorization: 'Bearer wrong-token-of-some-length' },
          })
        ).status,
      ).toBe(401);
      expect(
        (await fetch(`${opsUrl()}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })).status,
      ).toBe(200);
    }
    // Health checks stay open for orchestrators.
    expect((await fetch(`${opsUrl()}/healthz`)).status).toBe(200);
  });

  it('asks for the token in a login form, refuses a wrong one, and opens with the right one', async () => {
    const first = await page.goto(`${opsUrl()}/`);
    expect(first?.status()).toBe(401);
    await page.fill('input[name=token]', 'not-the-token-at-all');
    await page.click('button[type=submit]');
    await page.waitForSelector('#login-failed');
    await page.fill('input[name=token]', TOKEN);
    await Promise.all([page.waitForURL(`${opsUrl()}/`), page.click('button[type=submit]')]);
    await page.waitForSelector('#balance');
    expect(await page.textContent('#balance')).toBe('not seen yet');
    // The cookie holds an HMAC of the token, never the token.
    const cookies = await context.cookies();
    expect(cookies.map((cookie) => cookie.value).join()).not.toContain(TOKEN);
    expect(cookies.find((cookie) => cookie.name === 'herald_status')?.httpOnly).toBe(true);
  });

  it('shows the last balance the service reported, and the three utterances in the spend chart', async () => {
    for (const text of ['One for the chart.', 'Two for the chart.', 'Three for the chart.']) {
      await world.discord.slash(world.member, 'speak', { text });
    }
    await world.discord.voice(world.guild).untilSilent({ quietMs: 800 });
    await page.reload();

    // The emulator's balance after the last charge is what its last X-Balance-USD said.
    const balance = world.tts.balanceUsd;
    expect(Number(await page.getAttribute('#balance', 'data-usd'))).toBeCloseTo(balance, 9);
    expect(await page.textContent('#balance')).toBe(formatUsd(balance));
    expect(await page.textContent('#floor')).toBe(formatUsd(2));
    expect(await page.getAttribute('#budget-state', 'data-state')).toBe('active');

    // The last two bars: the three may straddle the turn of an hour (or of the UTC day).
    const lastTwo = async (chart: string) => {
      const bars = await page.locator(`${chart} g.bar`).evaluateAll((nodes) =>
        nodes.slice(-2).map((node) => ({
          generations: Number(node.getAttribute('data-generations')),
          usd: Number(node.getAttribute('data-usd')),
          height: Number(node.querySelector('rect')?.getAttribute('height')),
        })),
      );
      return {
        generations: bars.reduce((sum, bar) => sum + bar.generations, 0),
        usd: bars.reduce((sum, bar) => sum + bar.usd, 0),
        drawn: bars.every((bar) => bar.generations === 0 || bar.height > 0),
      };
    };
    const hours = await lastTwo('#spend-hourly');
    expect(hours.generations).toBe(3);
    expect(hours.usd).toBeCloseTo(world.tts.totalChargedUsd(), 9);
    expect(hours.drawn).toBe(true);
    expect((await lastTwo('#spend-daily')).generations).toBe(3);

    // Herald is still in voice: the server is listed with its queue.
    expect(await page.textContent('#sessions')).toContain(world.guild.name);

    const html = await page.content();
    expect(html).not.toContain(world.env.DISCORD_TOKEN);
    expect(html).not.toContain(world.env.TTS_API_KEY);
    expect(html).not.toContain(TOKEN);
    expect(blocked).toEqual([]);

    const path = SCREENSHOT ?? join(profile, 'status.png');
    mkdirSync(dirname(path), { recursive: true });
    await page.screenshot({ path, fullPage: true });
    expect(existsSync(path)).toBe(true);
  });
});
