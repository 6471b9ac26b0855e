// Re-makes docs/sandbox.png, the README's picture of the sandbox: `npm run sandbox:screenshot` (needs
// /usr/bin/chromium). Bob speaks, writes in #general, and lists the voices; the picture is taken once heard.
import { startSandbox } from '../sandbox/server.ts';
import { openBrowser } from '../test/sandbox/browser.ts';

const sandbox = await startSandbox({ port: 0, log: () => {} });
const browser = await openBrowser();
try {
  const { page } = browser;
  await page.goto(sandbox.url);
  await page.click('#sound');
  await page.waitForSelector('#sound:has-text("Sound on")');
  await page.selectOption('#command', 'speak');
  await page.fill('#options [name="text"]', 'hello everyone');
  await page.click('#run');
  await page.locator('#timeline li').first().waitFor();
  await page.fill('#message-input', 'Dinner is ready in ten minutes!');
  await page.press('#message-input', 'Enter');
  await page.locator('#timeline li').nth(1).waitFor({ timeout: 20_000 });
  await page.selectOption('#command', 'voices');
  await page.click('#run');
  await page.locator('#messages .embed').waitFor();
  await page.selectOption('#command', 'speak');
  await page.fill('#options [name="text"]', 'How long does the cake need?');
  await page.click('#run');
  await page.waitForSelector('#herald-in-voice.speaking');
  await page.screenshot({ path: new URL('../docs/sandbox.png', import.meta.url).pathname });
  console.log('wrote docs/sandbox.png');
} finally {
  await browser.close();
  await sandbox.close();
}
