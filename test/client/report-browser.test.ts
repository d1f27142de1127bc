import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ReportWriter } from '../../src/cli/client/report.js';
import { ResumeState } from '../../src/cli/client/state.js';
import { launchChromium, watchPage } from '../support/browser.js';

// The HTML report rendered by a real headless Chromium (Debian's, driven by puppeteer-core): no console
// errors, no request leaves the page, the counts and every run of the migration are on screen. The screenshot
// goes to test-output/.
describe('report.html', () => {
  it(
    'renders offline in Chromium with every run, its counts, chart, error codes and failures',
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'import-report-'));
      // The history of a migration lives in its resume state (a real SQLite file): a first run stopped after
      // 40 lines, then a second that skips the 36 created and sends the rest.
      const state = new ResumeState(join(dir, 'import-state.sqlite'), {
        service: 'http://127.0.0.1:1',
        organisation: 'org',
        mode: 'v1',
        team: 'Team',
        dry_run: false,
      });
      const line = (i: number) => {
        const failed = i % 10 === 0;
        return {
          line: i,
          import_supplier: 'ACME',
          external_account_number: `ACC-${i}`,
          outcome: failed ? ('validation_failed' as const) : ('created' as const),
          http_status: failed ? 400 : 201,
          kraken_account_number: failed ? null : `A-${String(i).padStart(8, '0')}`,
          errors: failed ? [{ code: 'invalid_postcode', attr: 'billing_postcode' }] : [],
          attempts: 2,
          ms: 40,
        };
      };
      const first = new ReportWriter(join(dir, 'report'), {
        command: "import-client migrate cohort.jsonl --team 'Team' --report report",
        history: state,
      });
      for (let i = 1; i <= 40; i++) first.add(line(i));
      const one = await first.finish({ interrupted: true });
      expect(one.run).toBe(1);

      const report = new ReportWriter(join(dir, 'report'), {
        command: "import-client migrate cohort.jsonl --team 'Team' --report report",
        history: state,
        throttled: () => 3,
      });
      for (let i = 1; i <= 120; i++) {
        const earlier = i <= 40 && i % 10 !== 0;
        report.add(earlier ? { ...line(i), attempts: 0, ms: 0, done_earlier: true } : line(i));
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
      const summary = await report.finish({ interrupted: false });
      state.close();
      expect(summary).toMatchObject({ run: 2, lines: 121, skipped_done_earlier: 36, sent: 85 });
      expect(summary.by_outcome).toMatchObject({ created: 72, validation_failed: 12, parse_error: 1 });
      expect(summary.total).toMatchObject({ runs: 2, sent: 125, server_throttled: 3 });
      expect(summary.total.by_outcome).toMatchObject({ created: 108, validation_failed: 16 });
      // The first run's files were kept, not written over.
      expect(
        JSON.parse(
          readFileSync(join(dir, 'report', 'earlier', stamp(one.started_at), 'summary.json'), 'utf8'),
        ),
      ).toMatchObject({ run: 1, lines: 40, interrupted: true });

      const profile = mkdtempSync(join(tmpdir(), 'chromium-'));
      const browser = await launchChromium(profile);
      try {
        const page = await browser.newPage();
        const { problems, requests } = watchPage(page);
        const url = pathToFileURL(join(dir, 'report', 'report.html')).href;
        await page.goto(url, { waitUntil: 'load' });
        expect(problems).toEqual([]);
        expect(requests.filter((r) => r !== url)).toEqual([]);
        const cards = await page.$$eval('.card', (els) =>
          els.map((e) => [
            (e as unknown as { dataset: Record<string, string> }).dataset.outcome,
            e.querySelector('.n')?.textContent,
          ]),
        );
        // This run's outcomes count only what it sent; what an earlier run did is a card of its own.
        expect(cards).toEqual(
          expect.arrayContaining([
            ['created', '72'],
            ['validation_failed', '12'],
            ['parse_error', '1'],
            ['done_earlier', '36'],
          ]),
        );
        const text = await page.$eval('body', (b) => (b as unknown as { innerText: string }).innerText);
        expect(text).toContain('Run 2 of 2');
        expect(text).toContain('121 lines read: 85 sent, 36 skipped (done in an earlier run)');
        expect(text).toContain('invalid_postcode');
        expect(text).toContain('billing_postcode (12)');
        expect(text).toContain('ACME / ACC-50');
        const cells = (selector: string) =>
          page.$$eval(selector, (rows) =>
            rows.map((r) =>
              [...r.querySelectorAll('td')].map((td) => (td as unknown as { innerText: string }).innerText),
            ),
          );
        const runs = await cells('#runs tbody tr');
        expect(runs).toHaveLength(2);
        // Run, …, ended, lines read, skipped, sent, succeeded, did not succeed.
        expect(runs[0]!.slice(3, 9)).toEqual(['interrupted', '40', '0', '40', '36', '4']);
        expect(runs[1]![0]).toBe('#2 (this report)');
        expect(runs[1]!.slice(3, 9)).toEqual(['completed', '121', '36', '85', '72', '13']);
        const [total] = await cells('#runs tfoot tr');
        expect(total!.slice(6, 9)).toEqual(['125', '108', '17']);
        expect(total!.at(-1)).toBe('3');
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

/** A time as the report names the folder of an earlier report. */
const stamp = (iso: string) => iso.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
