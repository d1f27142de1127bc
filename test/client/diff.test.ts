import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';
import { launchChromium, watchPage } from '../support/browser.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, readResults, runClient, startService } from './support.js';

// `diff` of two runs of a seeded cohort against the real service, `migrate --only failed-in:<report>`, and
// diff.html in Chromium. Run A: 300 of 400 accounts fail validation. Run B: 200 of them fixed, 20 of the 100
// that passed broken. Dry runs, so that B sends every line again (a created account would be skipped).
const SUPPLIER = 'DIFF_SUP';
const TEAM = 'Diff Team';
const ACCOUNTS = 400;
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-diff' } });
  const tenant = await clientTenant(t, 'Diff Org', SUPPLIER, TEAM);
  service = await startService(t);
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-diff-'));
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The cohort with the accounts of `broken` failing validation (a postcode the rules refuse). */
function cohort(name: string, broken: (i: number) => boolean): string {
  const lines = Array.from({ length: ACCOUNTS }, (_, i) =>
    JSON.stringify({
      ...validAccountPayload(),
      import_supplier: SUPPLIER,
      external_account_number: `D-${i}`,
      ...(broken(i) ? { billing_postcode: '1' } : {}),
    }),
  );
  const path = join(dir, name);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

const migrate = (file: string, report: string, extra: string[] = []) =>
  runClient(
    ['migrate', file, '--team', TEAM, '--dry-run', '--report', join(dir, report), '--quiet', ...extra],
    env,
  );

describe('diff and --only failed-in', () => {
  it(
    'classifies 200 fixed, 100 still failing, 20 newly failing; --only failed-in:B sends exactly those 120',
    { timeout: 300_000 },
    async () => {
      // A: accounts 0-299 fail. B: 0-199 fixed, 200-299 still fail, 300-319 newly broken.
      const a = await migrate(
        cohort('a.jsonl', (i) => i < 300),
        'A',
      );
      expect(a.code, a.stderr).toBe(1);
      const fileB = cohort('b.jsonl', (i) => (i >= 200 && i < 300) || (i >= 300 && i < 320));
      const b = await migrate(fileB, 'B');
      expect(b.code, b.stderr).toBe(1);

      const out = join(dir, 'diff');
      const diff = await runClient(['diff', join(dir, 'A'), join(dir, 'B'), '--report', out], env);
      expect(diff.code, diff.stderr).toBe(1);
      const summary = JSON.parse(diff.stdout);
      expect(summary.counts).toMatchObject({
        fixed: 200,
        still_failing_same_code: 100,
        still_failing_changed_code: 0,
        newly_failing: 20,
        only_in_a: 0,
        only_in_b: 0,
        still_ok: 80,
      });
      const [code] = Object.keys(summary.by_code.newly_failing);
      expect(summary.by_code.newly_failing[code!]).toMatchObject({
        accounts: 20,
        attrs: { billing_postcode: 20 },
      });
      expect(summary.by_code.fixed[code!].accounts).toBe(200);
      const lines = readFileSync(join(out, 'diff.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toHaveLength(ACCOUNTS);
      const newly = lines.filter((l) => l.category === 'newly_failing').map((l) => l.external_account_number);
      expect(newly.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `D-${300 + i}`).sort());

      // Exactly the accounts that did not succeed in B are sent again.
      const again = await migrate(fileB, 'C', ['--only', `failed-in:${join(dir, 'B')}`]);
      expect(again.code, again.stderr).toBe(1);
      const sent = readResults(join(dir, 'C')).map((r) => r.external_account_number!);
      const wanted = [...Array.from({ length: 120 }, (_, i) => `D-${200 + i}`)];
      expect(sent.sort()).toEqual(wanted.sort());

      await showPage(join(out, 'diff.html'));
    },
  );

  it('refuses a folder without results and an unknown selection (exit 2, one line)', async () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty, { recursive: true });
    const noResults = await runClient(['diff', empty, empty], {});
    expect(noResults.code).toBe(2);
    expect(noResults.stderr.trim().split('\n')).toHaveLength(1);
    const file = cohort('x.jsonl', () => false);
    const bad = await runClient(['migrate', file, '--team', TEAM, '--only', 'everything'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--only takes failed-in:<report>');
  });
});

/** diff.html in Chromium: no errors, no request, the cards and the rows of the newly failing. */
async function showPage(path: string): Promise<void> {
  const profile = mkdtempSync(join(tmpdir(), 'chromium-'));
  const browser = await launchChromium(profile);
  try {
    const page = await browser.newPage();
    const { problems, requests } = watchPage(page);
    const url = pathToFileURL(path).href;
    await page.goto(url, { waitUntil: 'load' });
    expect(problems).toEqual([]);
    expect(requests.filter((r) => r !== url)).toEqual([]);
    const cards = await page.$$eval('.card', (els) =>
      els.map((e) => [
        (e as unknown as { dataset: Record<string, string> }).dataset.category,
        e.querySelector('.n')?.textContent,
      ]),
    );
    expect(cards).toEqual(
      expect.arrayContaining([
        ['fixed', '200'],
        ['still_failing_same_code', '100'],
        ['newly_failing', '20'],
        ['still_ok', '80'],
      ]),
    );
    const rows = await page.$$eval('#accounts tbody tr', (trs) => trs.length);
    expect(rows).toBe(320);
    const text = await page.$eval('body', (b) => (b as unknown as { innerText: string }).innerText);
    expect(text).toContain('billing_postcode (20)');
    const out = resolve(import.meta.dirname, '../../test-output');
    mkdirSync(out, { recursive: true });
    await page.setViewport({ width: 1200, height: 900 });
    await page.screenshot({ path: join(out, 'client-diff.png'), fullPage: true });
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
