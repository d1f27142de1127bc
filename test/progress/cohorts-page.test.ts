import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processKey } from '../../src/storage/processes/process-key.js';
import { stagedPayloadModel } from '../../src/storage/models/staged-payload.js';
import { startService } from '../client/support.js';
import { accountPayload, setupTenant, SUPPLIER, TEAM, until } from '../creation/support.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';
import { launchChromium, watchPage } from '../support/browser.js';

// The cohort page (GET /cohorts/) in Debian's Chromium, against the real service (a web and a worker process):
// sign in with the API key (from the keyboard), watch the counts move while a cohort is created through the API,
// open the failures' accounts and download them as CSV. No request leaves for another host, no console error
// (the page's Content-Security-Policy would report one). Screenshots go to test-output/cohorts-page/.

const OTHER_SUPPLIER = 'ACME_GAS';
const root = resolve(import.meta.dirname, '../..');
const out = join(root, 'test-output', 'cohorts-page');

let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let apiKey: string;
let headers: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'cohorts-page' } });
  const tenant = await setupTenant(t, 'Cohort Org');
  apiKey = tenant.apiKey;
  headers = { ...tenant.headers, 'content-type': 'application/json' };
  await t.ops.createSupplier(OTHER_SUPPLIER, 'Cohort Org', { documentRoot: 'migrations/acme_gas' });
  await createTenant(t, 'Someone Else', 'NOT_OURS');
  service = await startService(t);
}, 180_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
});

async function post(path: string, body: object) {
  const res = await fetch(`${service.baseUrl}${path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
const stage = (external: string) =>
  post('/v1/data-import/account-import-process/create-or-update/', accountPayload(external));
const create = (external: string) =>
  post('/v1/data-import/account-import-process/process/', {
    external_account_number: external,
    import_supplier_code: SUPPLIER,
    operations_team_name: TEAM,
  });

/** The text of the cells of a table's body rows. */
const rows = (page: Page, selector: string) =>
  page.$$eval(`${selector} tbody tr`, (trs) =>
    trs.map((tr) =>
      [...tr.querySelectorAll('th, td')].map((c) => (c as unknown as { innerText: string }).innerText),
    ),
  );
/** The page's counts of the selected supplier, by status (the buttons' data-status). */
const counts = (page: Page) =>
  page.$$eval('#counts button', (buttons) =>
    Object.fromEntries(
      buttons.map((b) => [
        (b as unknown as { dataset: Record<string, string> }).dataset.status,
        Number((b as unknown as { innerText: string }).innerText.split(' ').pop()),
      ]),
    ),
  );
const waitFor = <T>(check: () => Promise<T | null | undefined | false>, what: string) =>
  until(check, what, 30_000);

describe('the cohort page', () => {
  it(
    'signs in, shows every supplier and follows a cohort live; failures open their accounts, downloaded as CSV',
    { timeout: 180_000 },
    async () => {
      mkdirSync(out, { recursive: true });
      const downloads = mkdtempSync(join(tmpdir(), 'cohorts-download-'));
      const profile = mkdtempSync(join(tmpdir(), 'chromium-'));
      const browser = await launchChromium(profile, { width: 1366, height: 768 });
      try {
        const session = await browser.target().createCDPSession();
        await session.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
        const page = await browser.newPage();
        const { problems, requests } = watchPage(page);
        page.on('response', (r) => {
          if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
        });

        await page.goto(`${service.baseUrl}/cohorts/`, { waitUntil: 'load' });
        // Sign in from the keyboard: Tab to the labelled key field, type the key, Enter.
        await waitFor(async () => {
          await page.keyboard.press('Tab');
          return (await page.evaluate('document.activeElement?.id')) === 'api-key';
        }, 'the API key field focused by Tab');
        expect(await page.$eval('label[for="api-key"]', (l) => l.textContent)).toBe('Organisation API key');
        // A wrong key first: the page says so and stays on the sign-in.
        await page.keyboard.type('not-a-key');
        await page.keyboard.press('Enter');
        await waitFor(
          async () => (await page.$eval('#problem', (p) => p.textContent)) === 'Invalid API key.',
          'the refusal of a wrong key',
        );
        expect(await page.evaluate('document.activeElement?.id')).toBe('api-key');
        await page.$eval('#api-key', (input) => ((input as unknown as { value: string }).value = ''));
        await page.keyboard.type(apiKey);
        await page.keyboard.press('Enter');

        // Every supplier of the organisation, and no other organisation's.
        await waitFor(async () => (await rows(page, '#suppliers')).length === 2, 'the two suppliers');
        const suppliers = await rows(page, '#suppliers');
        expect(suppliers.map((r) => r[0])).toEqual([SUPPLIER, OTHER_SUPPLIER]);
        expect(suppliers[0]!.slice(1, 3)).toEqual(['Ongoing', '0']);
        // The organisation's creation slots: none in use, its share (alone: the whole limit) of the limit.
        expect(suppliers[0]![6]).toBe('0 / 50 of 50');
        // The key is kept nowhere; the token only in the tab's session storage.
        const storage = (await page.evaluate(`({
          session: JSON.stringify(sessionStorage),
          local: JSON.stringify(localStorage),
          key: document.getElementById('api-key').value,
        })`)) as { session: string; local: string; key: string };
        expect(storage.session).toContain('cohorts.token');
        expect(storage.session).not.toContain(apiKey);
        expect(storage.local).not.toContain(apiKey);
        expect(storage.key).toBe('');

        // Open the supplier from the keyboard.
        await page.focus(`button[data-key="supplier:${SUPPLIER}"]`);
        await page.keyboard.press('Enter');
        await waitFor(
          async () =>
            (await page.$eval('#supplier-view', (s) => !(s as unknown as { hidden: boolean }).hidden)) ||
            null,
          'the supplier opened',
        );
        await waitFor(async () => (await counts(page)).PROCESSED === 0, 'the supplier’s counts');
        expect(await page.$eval('#slots', (p) => p.textContent)).toBe(
          "Creation slots: the organisation's creations hold 0 of its share of 50 (limit 50 for every " +
            'organisation); 0 waiting for a slot.',
        );

        // A first batch: staged (PENDING), then created (PROCESSED); the page follows without a reload.
        const first = ['COH-1', 'COH-2', 'COH-3'];
        for (const e of first) expect((await stage(e)).status).toBe(201);
        await waitFor(async () => (await counts(page)).PENDING === 3, 'three pending on the page');
        for (const e of first) expect((await create(e)).status).toBe(201);
        await waitFor(async () => {
          const c = await counts(page);
          return c.PROCESSED === 3 && c.PENDING === 0;
        }, 'three processed on the page');
        expect((await rows(page, '#suppliers'))[0]![2]).toBe('3');

        // A second batch with a validation failure at creation time (the staged data no longer passes).
        for (const e of ['COH-4', 'COH-5', 'COH-E-1']) expect((await stage(e)).status).toBe(201);
        await stagedPayloadModel(t.app.db.conn).updateOne(
          { _id: processKey(SUPPLIER, 'COH-E-1') },
          {
            $set: {
              payload: JSON.stringify({ ...accountPayload('COH-E-1'), billing_postcode: 'ABC' }),
              // Staged under other rules (another deployment's fingerprint): the creation validates it again.
              validatedWith: 'an earlier deployment',
            },
          },
        );
        for (const e of ['COH-4', 'COH-5']) expect((await create(e)).status).toBe(201);
        const failed = await create('COH-E-1');
        expect(failed.status).toBe(400);
        expect(failed.body.code).toBe('account_failed_validation');
        await waitFor(async () => {
          const c = await counts(page);
          return c.PROCESSED === 5 && c.ERRORED === 1 && c.PENDING === 0;
        }, 'five processed and one errored on the page');
        await waitFor(async () => (await rows(page, '#failures')).length === 1, 'the failures table');
        expect((await rows(page, '#failures'))[0]).toEqual([
          'account_failed_validation',
          '1',
          'billing_postcode (1)',
          'Show accounts',
        ]);
        expect((await rows(page, '#suppliers'))[0]![2]).toBe('6');
        // The chart holds this minute's processed and errored accounts (the last bar).
        await waitFor(
          () =>
            page.evaluate(`(() => {
              const chart = Chart.getChart('per-minute');
              const sum = (i) => chart.data.datasets[i].data.reduce((a, b) => a + b, 0);
              return chart !== undefined && sum(0) === 5 && sum(1) === 1 && chart.data.labels.length === 60;
            })()`),
          'the per-minute chart',
        );
        expect(await page.$eval('#chart-summary', (p) => p.textContent)).toBe(
          'Last hour: 5 processed, 1 errored.',
        );
        expect(await page.$eval('#updated', (p) => p.textContent)).toMatch(/signed in until \d/);
        await page.screenshot({ path: join(out, 'supplier.png'), fullPage: true });

        // The failure's accounts (drill-down), then their CSV.
        await page.click('button[data-key="failure:ERRORED:account_failed_validation"]');
        await waitFor(async () => (await rows(page, '#accounts')).length === 1, 'the failed accounts');
        const [account] = await rows(page, '#accounts');
        expect(account!.slice(0, 5)).toEqual([
          'COH-E-1',
          'ERRORED',
          '—',
          'account_failed_validation',
          'billing_postcode',
        ]);
        expect(await page.evaluate('document.activeElement?.id')).toBe('accounts-title');
        await page.screenshot({ path: join(out, 'drill-down.png'), fullPage: true });
        await page.click('#download');
        const file = join(downloads, `${SUPPLIER}-ERRORED-account_failed_validation.csv`);
        await waitFor(
          async () => existsSync(file) && readFileSync(file, 'utf8').length > 0,
          'the CSV download',
        );
        expect(readFileSync(file, 'utf8')).toBe(
          'external_account_number,status,code,paths\r\nCOH-E-1,ERRORED,account_failed_validation,billing_postcode\r\n',
        );
        expect(readdirSync(downloads)).toEqual([`${SUPPLIER}-ERRORED-account_failed_validation.csv`]);

        // The account's number links to its timeline: every step, and why it is where it is (its failure).
        await page.click('#accounts a[data-timeline="COH-E-1"]');
        await waitFor(
          async () => (await rows(page, '#timeline')).some((r) => r[1] === 'failed'),
          'the failed account’s timeline',
        );
        expect((await rows(page, '#timeline')).map((r) => r[1])).toEqual([
          'staged',
          'queued',
          'started',
          'failed',
        ]);
        expect(await page.$eval('#timeline-why', (p) => p.getAttribute('data-code'))).toBe('failed');
        expect(await page.$eval('#timeline-why', (p) => p.textContent)).toMatch(
          /^Now ERRORED: Failed with account_failed_validation at billing_postcode/,
        );
        expect(await page.evaluate('document.activeElement?.id')).toBe('timeline-title');
        await page.screenshot({ path: join(out, 'timeline.png'), fullPage: true });
        await page.click('#close-timeline');
        expect(await page.$eval('#timeline-view', (v) => (v as unknown as { hidden: boolean }).hidden)).toBe(
          true,
        );

        // The processed accounts, from their count.
        await page.click('button[data-key="count:PROCESSED"]');
        await waitFor(async () => (await rows(page, '#accounts')).length === 5, 'the processed accounts');
        expect((await rows(page, '#accounts')).map((r) => r[0]).sort()).toEqual([
          'COH-1',
          'COH-2',
          'COH-3',
          'COH-4',
          'COH-5',
        ]);

        // More than a page: the other supplier's 105 staged accounts, "Load more" (from the keyboard), and a CSV
        // of every page.
        const many = Array.from({ length: 105 }, (_, i) => `GAS-${String(i).padStart(3, '0')}`);
        for (let i = 0; i < many.length; i += 15) {
          const batch = many.slice(i, i + 15).map((e) =>
            post('/v1/data-import/account-import-process/create-or-update/', {
              ...accountPayload(e),
              import_supplier: OTHER_SUPPLIER,
            }),
          );
          for (const res of await Promise.all(batch)) expect(res.status).toBe(201);
        }
        await waitFor(
          async () => (await rows(page, '#suppliers'))[1]![2] === '105',
          'the other supplier’s 105 accounts in the list',
        );
        await page.click(`button[data-key="supplier:${OTHER_SUPPLIER}"]`);
        await waitFor(async () => (await counts(page)).PENDING === 105, 'the other supplier’s counts');
        expect(await page.$eval('#accounts-view', (v) => (v as unknown as { hidden: boolean }).hidden)).toBe(
          true,
        );
        await page.click('button[data-key="count:PENDING"]');
        await waitFor(async () => (await rows(page, '#accounts')).length === 100, 'the first page of 100');
        await page.focus('#more');
        await page.keyboard.press('Enter');
        await waitFor(async () => (await rows(page, '#accounts')).length === 105, 'the second page');
        expect(await page.$eval('#more', (b) => (b as unknown as { hidden: boolean }).hidden)).toBe(true);
        expect((await rows(page, '#accounts')).map((r) => r[0]).sort()).toEqual(many);
        await page.click('#download');
        const all = join(downloads, `${OTHER_SUPPLIER}-PENDING.csv`);
        await waitFor(async () => existsSync(all) && readFileSync(all, 'utf8').length > 0, 'the second CSV');
        const lines = readFileSync(all, 'utf8').trimEnd().split('\r\n');
        expect(lines[0]).toBe('external_account_number,status,code,paths');
        expect(lines.slice(1).sort()).toEqual(many.map((e) => `${e},PENDING,,`));

        // Only the service was asked; the key never went into a URL.
        const origin = new URL(service.baseUrl).origin;
        const elsewhere = requests.filter(
          (r) => new URL(r.startsWith('blob:') ? r.slice(5) : r).origin !== origin,
        );
        expect(elsewhere).toEqual([]);
        expect(requests.some((r) => r.includes(apiKey))).toBe(false);
        expect(requests).toEqual(
          expect.arrayContaining([`${origin}/cohorts/chart.js`, `${origin}/v1/graphql/`]),
        );
        expect(problems).toEqual([]);
      } finally {
        await browser.close();
        rmSync(profile, { recursive: true, force: true });
        rmSync(downloads, { recursive: true, force: true });
      }
    },
  );
});
