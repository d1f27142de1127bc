import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { setupTenant, startTestWorkers, SUPPLIER, until, type TestWorkers } from '../creation/support.js';
import { v2For, type V2 } from '../v2/support.js';
import { planFor, spoilScheduled, withTeam, type PlanApi } from './support.js';

// A cohort of 100 with a 20% bad slice (staged data the worker refuses) trips a breaker of 10% over 100 before
// those 100 accounts are through: the pause carries the failing codes; resuming creates the rest, once each.
let t: TestApp;
let v2: V2;
let plan: PlanApi;
let workers: TestWorkers;
const COHORT = 100;

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'cutover-breaker',
      ACCOUNT_CREATION_CONCURRENCY: '10',
      COHORT_PLAN_CHECK_INTERVAL_MS: '200',
    },
  });
  const { headers } = await setupTenant(t, 'Breaker Org');
  v2 = v2For(t, headers);
  plan = planFor(t, headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const statuses = async (externals: string[]) =>
  Promise.all(externals.map(async (e) => (await v2.status(e)).json().status as string));

describe('the breaker', () => {
  it(
    'trips within the first 100 accounts of a cohort with a 20% bad slice, with the codes; resume finishes it',
    { timeout: 300_000 },
    async () => {
      const put = await plan.put({
        expected_accounts: COHORT,
        breaker: { error_percent: 10, over_accounts: 100 },
      });
      expect(put.statusCode).toBe(200);
      // Paused by the operator while the cohort is scheduled and its bad slice made.
      expect((await plan.pause({ reason: 'loading the cohort' })).json()).toMatchObject({
        status: 'PAUSED',
        pause: { reason: 'operator', detail: 'loading the cohort', codes: [] },
      });
      const externals = Array.from({ length: COHORT }, (_, i) => `BRK-${String(i).padStart(3, '0')}`);
      for (let i = 0; i < externals.length; i += 25) {
        const answers = await Promise.all(externals.slice(i, i + 25).map((e) => v2.schedule(withTeam(e))));
        for (const res of answers) expect(res.statusCode).toBe(201);
      }
      const bad = externals.filter((_, i) => i % 5 === 2);
      for (const e of bad) await spoilScheduled(t, e);
      expect((await plan.resume()).json()).toMatchObject({ status: 'ACTIVE', pause: null });

      const tripped = await until(
        async () => {
          const body = (await plan.get()).json();
          return body.status === 'PAUSED' ? body : null;
        },
        'the breaker to trip',
        240_000,
      );
      expect(tripped.pause.reason).toBe('breaker');
      // More than 10% of the last 100 finished accounts errored: 11 or more, among fewer than 100 finished.
      const [failing] = tripped.pause.codes;
      expect(tripped.pause.codes).toHaveLength(1);
      expect(failing.code).toBe('account_failed_validation');
      expect(failing.count).toBeGreaterThan(10);
      expect(tripped.counts.errored).toBeGreaterThan(10);
      expect(tripped.counts.processed + tripped.counts.errored).toBeLessThan(COHORT);
      const stopped = await until(async () => {
        const body = (await plan.get()).json();
        return body.counts.in_flight === 0 ? body : null;
      }, 'the creations in flight to finish');
      const left = (await statuses(externals)).filter((s) => s === 'PENDING').length;
      expect(left).toBe(COHORT - stopped.counts.processed - stopped.counts.errored);
      expect(left).toBeGreaterThan(0);

      expect((await plan.resume()).json()).toMatchObject({ status: 'ACTIVE', pause: null });
      await until(
        async () => (await statuses(externals)).every((s) => s === 'PROCESSED' || s === 'ERRORED'),
        'every account to finish',
        240_000,
      );
      const end = await statuses(externals);
      expect(end.filter((s) => s === 'ERRORED')).toHaveLength(bad.length);
      expect(
        await t.app.db.models.Account.countDocuments({
          importSupplier: SUPPLIER,
          externalAccountNumber: /^BRK-/,
        }),
      ).toBe(COHORT - bad.length);
      expect((await plan.get()).json()).toMatchObject({
        status: 'ACTIVE',
        counts: { processed: COHORT - bad.length, errored: bad.length, in_flight: 0 },
      });
    },
  );
});
