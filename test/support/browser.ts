import puppeteer, { type Browser, type Page } from 'puppeteer-core';

/**
 * Debian's Chromium, headless, for the tests of pages (the client's report, the cohort page): a profile of the
 * test's own, and nothing of Chromium's own traffic (updates, sync, background requests), so a test can assert
 * that the page alone made every request it saw.
 */
export function launchChromium(
  profile: string,
  viewport?: { width: number; height: number },
): Promise<Browser> {
  return puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    ...(viewport ? { defaultViewport: viewport } : {}),
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
    ],
  });
}

/** What a page does wrong (console errors, uncaught errors) and every URL it requests, as they happen. */
export function watchPage(page: Page): { problems: string[]; requests: string[] } {
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('request', (r) => requests.push(r.url()));
  return { problems, requests };
}
