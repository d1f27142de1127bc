import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { reconcileOutcomes, type Result } from '../../src/cli/client/outcomes.js';
import { DifferenceTally } from '../../src/cli/client/reconcile/tally.js';
import { ReportWriter } from '../../src/cli/client/report.js';
import { launchChromium, watchPage } from '../support/browser.js';

// Reconcile's report.html in a real headless Chromium: the outcome cards, the mismatches grouped by field with
// their accounts and money, the total money difference, and the accounts with their differences; no console
// errors and no request leaves the page. The screenshot goes to test-output/.
describe('reconcile report.html', () => {
  it('shows mismatches by field and the total money difference', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reconcile-report-'));
    const tally = new DifferenceTally();
    const report = new ReportWriter(join(dir, 'report'), {
      command: 'import-client reconcile cohort.jsonl --transactions tx.jsonl',
      outcomes: reconcileOutcomes,
      extension: tally,
    });
    const base = (i: number): Omit<Result, 'outcome'> => ({
      line: i,
      import_supplier: 'ACME',
      external_account_number: `ACC-${i}`,
      http_status: 200,
      kraken_account_number: `A-${String(i).padStart(8, '0')}`,
      errors: [],
      attempts: 1,
      ms: 900,
    });
    for (let i = 1; i <= 20; i++) {
      if (i === 4)
        report.add({
          ...base(i),
          outcome: 'mismatched',
          differences: [
            { field: 'ledgers.ELECTRICITY.balance', expected: '-120.50', actual: '-110.50' },
            {
              field: 'ledgers.ELECTRICITY.transactions.digest',
              expected: 'a'.repeat(64),
              actual: 'b'.repeat(64),
            },
          ],
          money_difference: '10.00',
        });
      else if (i === 9)
        report.add({
          ...base(i),
          outcome: 'mismatched',
          differences: [
            { field: 'ledgers.ELECTRICITY.balance', expected: '7.40', actual: '0.00' },
            { field: 'ledgers.ELECTRICITY.transactions.count', expected: 25, actual: 24 },
            { field: 'notes', expected: 3, actual: 2 },
          ],
          money_difference: '7.40',
        });
      else if (i === 13)
        report.add({
          ...base(i),
          outcome: 'not_created',
          kraken_account_number: null,
          errors: [{ code: 'not_found', attr: 'non_field_errors' }],
        });
      else report.add({ ...base(i), outcome: 'matched', differences: [], money_difference: '0.00' });
    }
    const summary = await report.finish({ interrupted: false });
    expect(summary.by_outcome).toEqual({
      matched: 17,
      mismatched: 2,
      not_created: 1,
      duplicate: 0,
      failed: 0,
      parse_error: 0,
    });
    expect(summary.reconciliation).toMatchObject({
      accounts_compared: 19,
      money_difference: '17.40',
      by_field: {
        'ledgers.ELECTRICITY.balance': { accounts: 2, money_difference: '17.40' },
        notes: { accounts: 1 },
      },
    });
    const csv = readFileSync(join(dir, 'report', 'results.csv'), 'utf8').split('\n');
    expect(csv[0]!.endsWith(',differences')).toBe(true);

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
        els.map((e) => [(e as unknown as { dataset: Record<string, string> }).dataset.outcome, e.className]),
      );
      expect(cards).toEqual(
        expect.arrayContaining([
          ['matched', 'card ok'],
          ['mismatched', 'card bad'],
          ['not_created', 'card bad'],
        ]),
      );
      expect(await page.$eval('#mismatches', (s) => (s as unknown as { hidden: boolean }).hidden)).toBe(
        false,
      );
      const money = await page.$eval('#moneyline', (p) => (p as unknown as { innerText: string }).innerText);
      expect(money).toContain('Total money difference: 17.40');
      expect(money).toContain('19 accounts compared, 2 mismatched');
      const rows = await page.$$eval('#fields tbody tr', (trs) =>
        trs.map((tr) =>
          [...tr.querySelectorAll('td')].map((td) => (td as unknown as { innerText: string }).innerText),
        ),
      );
      // Most frequent field first; money only on balance fields.
      expect(rows[0]).toEqual([
        'ledgers.ELECTRICITY.balance',
        '2',
        '17.40',
        'ACC-4 (-120.50 → -110.50), ACC-9 (7.40 → 0.00)',
      ]);
      expect(rows.map((r) => r[0])).toEqual([
        'ledgers.ELECTRICITY.balance',
        'ledgers.ELECTRICITY.transactions.count',
        'ledgers.ELECTRICITY.transactions.digest',
        'notes',
      ]);
      expect(rows.find((r) => r[0] === 'notes')).toEqual(['notes', '1', '', 'ACC-9 (3 → 2)']);
      // Digests shortened on screen (whole in the results files).
      expect(rows.find((r) => r[0] === 'ledgers.ELECTRICITY.transactions.digest')![3]).toBe(
        `ACC-4 (${'a'.repeat(12)}… → ${'b'.repeat(12)}…)`,
      );
      const failures = await page.$eval(
        '#failures',
        (t) => (t as unknown as { innerText: string }).innerText,
      );
      expect(failures).toContain('ledgers.ELECTRICITY.balance: -120.50 → -110.50');
      expect(failures).toContain('not_found @ non_field_errors');
      const out = resolve(import.meta.dirname, '../../test-output');
      mkdirSync(out, { recursive: true });
      await page.setViewport({ width: 1200, height: 900 });
      await page.screenshot({ path: join(out, 'reconcile-report.png'), fullPage: true });
    } finally {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
