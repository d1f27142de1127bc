import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';
import { describe, expect, it } from 'vitest';
import { ReportWriter } from '../../src/client/report.js';

// The HTML report rendered by a real headless Chromium (Debian's, driven by puppeteer-core): no console
// errors, no request leaves the page, the counts are on screen. The screenshot goes to test-output/.
describe('report.html', () => {
  it(
    'renders offline in Chromium with its counts, chart, error codes and failures',
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'import-report-'));
      const report = new ReportWriter(dir);
      for (let i = 1; i <= 120; i++) {
        const failed = i % 10 === 0;
        report.add({
          line: i,
          import_supplier: 'ACME',
          external_account_number: `ACC-${i}`,
          outcome: failed ? 'validation_failed' : 'created',
          http_status: failed ? 400 : 201,
          kraken_account_number: failed ? null : `A-${String(i).padStart(8, '0')}`,
          errors: failed ? [{ code: 'invalid_postcode', attr: 'billing_postcode' }] : [],
          attempts: 2,
          ms: 40,
        });
      }
      report.add({
        line: 121,
        import_supplier: null,
        external_account_number: null,
        outcome: 'parse_error',
        http_status: null,
        kraken_account_number: null,
        errors: [{ code: 'parse_error', attr: 'non_field_errors' }],
        attempts: 0,
        ms: 0,
      });
      await report.finish('migrate cohort.jsonl --mode v1', { throttled: 3, interrupted: false });

      const profile = mkdtempSync(join(tmpdir(), 'chromium-'));
      const browser = await puppeteer.launch({
        executablePath: '/usr/bin/chromium',
        headless: true,
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
      try {
        const page = await browser.newPage();
        const problems: string[] = [];
        const requests: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error') problems.push(m.text());
        });
        page.on('pageerror', (e) => problems.push(String(e)));
        page.on('request', (r) => requests.push(r.url()));
        const url = pathToFileURL(join(dir, 'report.html')).href;
        await page.goto(url, { waitUntil: 'load' });
        expect(problems).toEqual([]);
        expect(requests.filter((r) => r !== url)).toEqual([]);
        const cards = await page.$$eval('.card', (els) =>
          els.map((e) => [
            (e as unknown as { dataset: Record<string, string> }).dataset.outcome,
            e.querySelector('.n')?.textContent,
          ]),
        );
        expect(cards).toEqual(
          expect.arrayContaining([
            ['created', '108'],
            ['validation_failed', '12'],
            ['parse_error', '1'],
          ]),
        );
        const text = await page.$eval('body', (b) => (b as unknown as { innerText: string }).innerText);
        expect(text).toContain('invalid_postcode');
        expect(text).toContain('billing_postcode (12)');
        expect(text).toContain('ACME / ACC-10');
        // The chart drew on its canvas.
        expect(
          await page.$eval(
            '#throughput',
            (c) => (c as unknown as { toDataURL(): string }).toDataURL().length,
          ),
        ).toBeGreaterThan(1_000);
        const out = resolve(import.meta.dirname, '../../test-output');
        mkdirSync(out, { recursive: true });
        await page.setViewport({ width: 1200, height: 900 });
        await page.screenshot({ path: join(out, 'client-report.png'), fullPage: true });
        writeFileSync(join(out, 'client-report.url.txt'), url + '\n');
      } finally {
        await browser.close();
        rmSync(profile, { recursive: true, force: true });
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
