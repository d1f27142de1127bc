import puppeteer, { type Browser } from 'puppeteer-core';

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
