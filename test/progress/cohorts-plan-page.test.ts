import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { HTTPRequest, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processKey } from '../../src/storage/processes/process-key.js';
import { stagedPayloadModel } from '../../src/storage/models/staged-payload.js';
import { startService } from '../client/support.js';
import { accountPayload, setupTenant, SUPPLIER, TEAM, until } from '../creation/support.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { launchChromium, watchPage } from '../support/browser.js';

// The cohort plan on the cohort page (issue 47) in Debian's Chromium, against the real service (a web and a worker
// process): a supplier with a plan and a canary of 3 pauses after its third account; the page shows the plan, the
// pause's reason and the approve button; a failed resume is said in the problem line (and stays), pressing the
// button again resumes the cohort (the API then says ACTIVE, the page "Running"). A breaker's pause shows the codes
// that tripped it, an operator's its reason, and a window shorter than the projection "At risk". Screenshots go to
// test-output/cohorts-plan-page/.

const BREAKER_SUPPLIER = 'ACME_GAS';
const root = resolve(import.meta.dirname, '../..');
const out = join(root, 'test-output', 'cohorts-plan-page');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let apiKey: string;
let headers: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'cohorts-plan-page' } });
  const tenant = await setupTenant(t, 'Plan Org');
  apiKey = tenant.apiKey;
  headers = { ...tenant.headers, 'content-type': 'application/json' };
  await t.ops.createSupplier(BREAKER_SUPPLIER, 'Plan Org', { documentRoot: 'migrations/acme_gas' });
  service = await startService(t);
}, 180_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
});

async function call(method: string, path: string, body?: object) {
  const res = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers,
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}
const planPath = (supplier: string) => `/v2/data-import/import-suppliers/${supplier}/plan/`;
const getPlan = async (supplier = SUPPLIER) => (await call('GET', planPath(supplier))).body;
/** Stages an account and creates it (v1), answering the create's status and body. */
async function stageAndCreate(external: string, supplier = SUPPLIER, spoil = false) {
  const staged = await call('POST', '/v1/data-import/account-import-process/create-or-update/', {
    ...accountPayload(external),
    import_supplier: supplier,
  });
  expect(staged.status).toBe(201);
  if (spoil)
    // Staged under other rules (another deployment's fingerprint): the creation validates it again, and fails.
    await stagedPayloadModel(t.app.db.conn).updateOne(
      { _id: processKey(supplier, external) },
      {
        $set: {
          payload: JSON.stringify({
            ...accountPayload(external),
            import_supplier: supplier,
            billing_postcode: 'ABC',
          }),
          validatedWith: 'an earlier deployment',
        },
      },
    );
  return call('POST', '/v1/data-import/account-import-process/process/', {
    external_account_number: external,
    import_supplier_code: supplier,
    operations_team_name: TEAM,
  });
}

const text = (page: Page, selector: string) =>
  page.$eval(selector, (e) => (e as unknown as { innerText: string }).innerText);
const hidden = (page: Page, selector: string) =>
  page.$eval(selector, (e) => (e as unknown as { hidden: boolean }).hidden);
/** The plan's facts on the page, by their data-field. */
const facts = (page: Page) =>
  page.$$eval('#plan-facts dd', (dds) =>
    Object.fromEntries(
      dds.map((d) => [
        (d as unknown as { dataset: Record<string, string> }).dataset.field,
        (d as unknown as { innerText: string }).innerText.trim(),
      ]),
    ),
  ) as Promise<Record<string, string>>;
const timeOf = (page: Page, field: string) =>
  page.$eval(`#plan-facts dd[data-field="${field}"] time`, (e) => e.getAttribute('datetime'));
const waitFor = <T>(check: () => Promise<T | null | undefined | false>, what: string) =>
  until(check, what, 30_000);
/** The plan chart's lines: each dataset's label and points. */
const chartLines = (page: Page) =>
  page.evaluate(`(() => {
    const chart = Chart.getChart('plan-chart');
    return chart ? chart.data.datasets.map((d) => ({ label: d.label, data: d.data })) : null;
  })()`) as Promise<{ label: string; data: { x: number; y: number }[] }[] | null>;

describe('the cohort plan on the cohort page', () => {
  it(
    'shows the plan, the canary’s pause and its approve button; a failed resume says so, a resume resumes',
    { timeout: 240_000 },
    async () => {
      mkdirSync(out, { recursive: true });
      const windowEnd = new Date(Date.now() + 2 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
      const put = await call('PUT', planPath(SUPPLIER), {
        expected_accounts: 10,
        canary_accounts: 3,
        schedule_window_end: windowEnd,
      });
      expect(put.status).toBe(200);
      const windowStart = put.body.schedule_window_start as string;
      expect(windowStart).toMatch(ISO);

      const profile = mkdtempSync(join(tmpdir(), 'chromium-'));
      const browser = await launchChromium(profile, { width: 1366, height: 768 });
      try {
        const page = await browser.newPage();
        const { problems, requests } = watchPage(page);
        page.on('response', (r) => {
          if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
        });
        await page.goto(`${service.baseUrl}/cohorts/#supplier=${SUPPLIER}`, { waitUntil: 'load' });
        await page.type('#api-key', apiKey);
        await page.keyboard.press('Enter');
        await waitFor(async () => !(await hidden(page, '#plan-view')), 'the plan shown');
        expect(await text(page, '#plan-title')).toBe('Cohort plan');
        expect(await facts(page)).toMatchObject({
          expected: '10',
          done: '0 (0 %)',
          projected: 'Not known yet: no account finished in the last 5 minutes.',
          verdict: 'Not known yet: no projected finish.',
          state: 'Running: creations are admitted.',
        });
        expect(await timeOf(page, 'window-end')).toBe(windowEnd);
        expect(await hidden(page, '#plan-pause')).toBe(true);

        // The canary: three accounts created, then the cohort pauses; a fourth create is refused, naming why.
        for (const e of ['PLAN-1', 'PLAN-2', 'PLAN-3']) expect((await stageAndCreate(e)).status).toBe(201);
        await until(async () => (await getPlan()).status === 'PAUSED', 'the canary’s pause');
        const refused = await stageAndCreate('PLAN-4');
        expect(refused.status).toBe(400);
        expect(refused.body.code).toBe('import_supplier_migration_not_ongoing');
        expect(refused.body.detail).toContain('paused (canary)');

        await waitFor(async () => !(await hidden(page, '#plan-pause')), 'the pause shown');
        expect(await text(page, '#plan-pause-text')).toMatch(/^Paused by the canary since .+\.$/);
        expect(await page.$eval('#plan-pause-text time', (e) => e.getAttribute('datetime'))).toBe(
          (await getPlan()).pause.since,
        );
        expect(await text(page, '#plan-resume')).toBe('Approve and resume');
        expect(await page.$eval('#plan-resume', (b) => b.getAttribute('aria-label'))).toBe(
          'Approve the canary accounts and resume the cohort',
        );
        expect(await hidden(page, '#plan-codes-title')).toBe(true);
        await waitFor(async () => (await facts(page)).done === '3 (30 %)', 'three done on the page');
        const shown = await facts(page);
        expect(shown.state).toBe('Paused');
        expect(shown.verdict).toBe('On time: the projected finish is before the window ends.');
        expect(await page.$eval('#plan-facts .ok', (e) => e.textContent)).toBe(shown.verdict);
        expect(await timeOf(page, 'projected')).toMatch(ISO);
        // Planned against actual: done over the last hour ending at 3, the window's line from 0 to 10, the
        // projection from 3 to 10.
        const lines = await waitFor(async () => {
          const l = await chartLines(page);
          return l && l[0]!.data.at(-1)!.y === 3 ? l : null;
        }, 'the plan chart');
        expect(lines.map((l) => l.label)).toEqual(['Done (actual)', 'Planned (window)', 'Projected']);
        expect(lines[0]!.data.length).toBe(61);
        expect(lines[0]!.data[0]!.y).toBe(0);
        expect(lines[1]!.data).toEqual([
          { x: Date.parse(windowStart), y: 0 },
          { x: Date.parse(windowEnd), y: 10 },
        ]);
        expect(lines[2]!.data.map((p) => p.y)).toEqual([3, 10]);
        expect(await text(page, '#plan-chart-summary')).toMatch(
          /^Done: 3 of 10 now, 0 an hour ago\. Planned: all 10 by the window’s end\. Projected: all by .+\.$/,
        );
        await page.screenshot({ path: join(out, 'canary-paused.png'), fullPage: true });

        // A resume that fails (the service's answer replaced once): the problem line says so and keeps saying it
        // through the next refreshes; the cohort is still paused.
        await page.setRequestInterception(true);
        // A request seen as the interception ends is neither answered nor continued here: the browser sends it.
        const settled = () => undefined;
        const failOnce = (r: HTTPRequest) => {
          if (r.url().endsWith('/plan/resume/') && r.method() === 'POST')
            r.respond({
              status: 503,
              contentType: 'application/json',
              body: JSON.stringify({ code: 'service_unavailable', detail: 'The service is unavailable.' }),
            }).catch(settled);
          else r.continue().catch(settled);
        };
        page.on('request', failOnce);
        await page.click('#plan-resume');
        const failure = 'Could not resume the cohort: The service is unavailable.';
        await waitFor(async () => (await text(page, '#problem')) === failure, 'the failure said');
        await page.setRequestInterception(false);
        page.off('request', failOnce);
        const updated = await text(page, '#updated');
        await waitFor(async () => (await text(page, '#updated')) !== updated, 'a refresh');
        expect(await text(page, '#problem')).toBe(failure);
        expect((await getPlan()).status).toBe('PAUSED');
        const failed = problems.filter((p) => p.includes('503'));
        expect(failed.length).toBeGreaterThan(0);
        problems.splice(0, problems.length, ...problems.filter((p) => !p.includes('503')));

        // Approve from the keyboard: the API says ACTIVE (the canary approved), the page says running.
        await page.focus('#plan-resume');
        await page.keyboard.press('Enter');
        await waitFor(async () => await hidden(page, '#plan-pause'), 'the pause gone from the page');
        expect(await getPlan()).toMatchObject({ status: 'ACTIVE', pause: null, canary_approved: true });
        expect((await facts(page)).state).toBe('Running: creations are admitted.');
        expect(await text(page, '#problem')).toBe('');
        expect(await page.evaluate('document.activeElement?.id')).toBe('plan-title');
        expect(
          (
            await call('POST', '/v1/data-import/account-import-process/process/', {
              external_account_number: 'PLAN-4',
              import_supplier_code: SUPPLIER,
              operations_team_name: TEAM,
            })
          ).status,
        ).toBe(201);
        await waitFor(async () => (await facts(page)).done === '4 (40 %)', 'four done on the page');

        // An operator's pause shows the reason given.
        const paused = await call('POST', `${planPath(SUPPLIER)}pause/`, { reason: 'Checking the extract' });
        expect(paused.status).toBe(200);
        await waitFor(async () => !(await hidden(page, '#plan-pause')), 'the operator’s pause shown');
        expect(await text(page, '#plan-pause-text')).toMatch(/^Paused by an operator since /);
        expect(await text(page, '#plan-pause-detail')).toBe('Why: Checking the extract.');
        expect(await text(page, '#plan-resume')).toBe('Resume');

        // A window shorter than the projection (a cohort of 1,000 now: 996 left at 4 over the run's age, 249 times
        // its age from now, past the minute once the run is a second old): at risk, in words.
        const shortEnd = new Date(Date.now() + 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
        const shorter = await call('PUT', planPath(SUPPLIER), {
          expected_accounts: 1_000,
          canary_accounts: 3,
          schedule_window_end: shortEnd,
        });
        expect(shorter.status).toBe(200);
        await waitFor(
          async () =>
            (await facts(page)).verdict === 'At risk: the projected finish is after the window ends.',
          'at risk on the page',
        );
        expect(await page.$eval('#plan-facts .risk', (e) => e.textContent)).toMatch(/^At risk/);
        expect(await timeOf(page, 'window-end')).toBe(shortEnd);

        // The breaker of another supplier (10 % over 10): two failing accounts trip it; the page names the codes.
        const breaker = await call('PUT', planPath(BREAKER_SUPPLIER), {
          expected_accounts: 5,
          breaker: { error_percent: 10, over_accounts: 10 },
        });
        expect(breaker.status).toBe(200);
        for (const e of ['GAS-E-1', 'GAS-E-2']) {
          const res = await stageAndCreate(e, BREAKER_SUPPLIER, true);
          expect(res.status).toBe(400);
          expect(res.body.code).toBe('account_failed_validation');
        }
        expect(await getPlan(BREAKER_SUPPLIER)).toMatchObject({
          status: 'PAUSED',
          pause: { reason: 'breaker', codes: [{ code: 'account_failed_validation', count: 2 }] },
        });
        await page.click(`button[data-key="supplier:${BREAKER_SUPPLIER}"]`);
        await waitFor(
          async () =>
            (await text(page, '#supplier-title')).startsWith(BREAKER_SUPPLIER) &&
            !(await hidden(page, '#plan-pause')) &&
            (await text(page, '#plan-pause-text')).startsWith('Paused by the error-rate breaker since '),
          'the breaker’s pause shown',
        );
        expect(await hidden(page, '#plan-codes-title')).toBe(false);
        expect(await page.$$eval('#plan-codes li', (li) => li.map((l) => l.textContent))).toEqual([
          'account_failed_validation (2)',
        ]);
        expect((await facts(page)).verdict).toBe('No window: the plan has no end to finish before.');
        const noWindow = await waitFor(async () => {
          const l = await chartLines(page);
          return l && l[0]!.data.at(-1)!.y === 2 ? l : null;
        }, 'the breaker supplier’s chart');
        expect(noWindow[1]!.data).toEqual([]);
        // No window, no planned line: the legend names only the lines drawn.
        expect(
          await page.evaluate(`Chart.getChart('plan-chart').legend.legendItems.map((i) => i.text)`),
        ).toEqual(['Done (actual)', 'Projected']);
        await page.screenshot({ path: join(out, 'breaker-paused.png'), fullPage: true });

        // Only the service was asked; the key never went into a URL; nothing went wrong in the page.
        const origin = new URL(service.baseUrl).origin;
        expect(requests.filter((r) => new URL(r).origin !== origin)).toEqual([]);
        expect(requests.some((r) => r.includes(apiKey))).toBe(false);
        expect(requests).toEqual(expect.arrayContaining([`${origin}${planPath(SUPPLIER)}resume/`]));
        expect(problems).toEqual([]);
      } finally {
        await browser.close();
        rmSync(profile, { recursive: true, force: true });
      }
    },
  );
});
