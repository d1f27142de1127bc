import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processEventId } from '../../src/storage/models/import-event.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { setupTenant, startTestWorkers, SUPPLIER, until, type TestWorkers } from '../creation/support.js';
import { v2For, type V2 } from '../v2/support.js';
import { planFor, withTeam, type PlanApi } from './support.js';

// A canary of N admits creations only while (PROCESSED + in flight) < N, in one Redis script: with 100 tasks
// due at once and 50 creation slots, the cohort still pauses at exactly N PROCESSED; approving it creates the
// rest, each account once.
let t: TestApp;
let v2: V2;
let plan: PlanApi;
const workers: TestWorkers[] = [];
const CANARY = 20;
const COHORT = 100;

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'cutover-canary',
      ACCOUNT_CREATION_CONCURRENCY: '50',
      COHORT_PLAN_CHECK_INTERVAL_MS: '200',
    },
  });
  const { headers } = await setupTenant(t, 'Canary Org');
  v2 = v2For(t, headers);
  plan = planFor(t, headers);
  for (let i = 0; i < 2; i++) workers.push(await startTestWorkers(t.config));
});
afterAll(async () => {
  for (const w of workers) await w.stop();
  await t?.close();
});

const accounts = () =>
  t.app.db.models.Account.countDocuments({ importSupplier: SUPPLIER, externalAccountNumber: /^CAN-/ });

describe('the canary', () => {
  it(
    `pauses at exactly ${CANARY} PROCESSED with ${COHORT} due and 50 slots; approved, the rest are created once`,
    { timeout: 300_000 },
    async () => {
      const put = await plan.put({ expected_accounts: COHORT, canary_accounts: CANARY });
      expect(put.statusCode).toBe(200);
      expect(put.json()).toMatchObject({ status: 'ACTIVE', canary_accounts: CANARY, pause: null });
      const externals = Array.from({ length: COHORT }, (_, i) => `CAN-${String(i).padStart(3, '0')}`);
      for (let i = 0; i < externals.length; i += 25) {
        const answers = await Promise.all(externals.slice(i, i + 25).map((e) => v2.schedule(withTeam(e))));
        for (const res of answers) expect(res.statusCode).toBe(201);
      }
      const paused = await until(async () => {
        const body = (await plan.get()).json();
        return body.status === 'PAUSED' ? body : null;
      }, 'the canary to pause the cohort');
      expect(paused.pause).toMatchObject({ reason: 'canary', codes: [] });
      expect(paused.counts).toEqual({ processed: CANARY, errored: 0, in_flight: 0 });
      expect(await accounts()).toBe(CANARY);
      // The progress body shows the plan and its pause.
      const progress = await until(async () => {
        const body = (await plan.progress()).json();
        return body.accounts.PROCESSED === CANARY ? body : null;
      }, 'the progress counts');
      expect(progress.plan).toMatchObject({
        expected_accounts: COHORT,
        done: CANARY,
        percent_done: 20,
        schedule_window_end: null,
        finishes_in_window: null,
        pause: { reason: 'canary' },
      });
      expect(progress.plan.projected_finish).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      // The rest wait (PENDING), still the canary's.
      expect(progress.accounts.PENDING + progress.accounts.IN_PROGRESS).toBe(COHORT - CANARY);
      expect(await accounts()).toBe(CANARY);

      const resumed = await plan.resume();
      expect(resumed.statusCode).toBe(200);
      expect(resumed.json()).toMatchObject({ status: 'ACTIVE', canary_approved: true, pause: null });
      await until(async () => (await accounts()) === COHORT, 'every account to be created', 240_000);
      const models = t.app.db.models;
      // Exactly one PROCESSED per account, at its fourth position (CREATED, SCHEDULED, STARTED, PROCESSED).
      // (An account is written before its PROCESSED event: wait for the last events to land.)
      const processed = await until(async () => {
        const docs = await Promise.all(
          externals.map((e) =>
            models.ImportEvent.findById(processEventId(processKey(SUPPLIER, e), 3)).lean(),
          ),
        );
        return docs.every((doc) => doc) ? docs : null;
      }, 'every account’s fourth event');
      expect(processed.map((doc) => doc?.event)).toEqual(externals.map(() => 'PROCESSED'));
      const after = await Promise.all(
        externals.map((e) => models.ImportEvent.exists({ _id: processEventId(processKey(SUPPLIER, e), 4) })),
      );
      expect(after).toEqual(externals.map(() => null));
      const settled = await until(async () => {
        const body = (await plan.get()).json();
        return body.counts.processed === COHORT ? body : null;
      }, 'the plan to count every account');
      expect(settled).toMatchObject({
        status: 'ACTIVE',
        counts: { processed: COHORT, errored: 0, in_flight: 0 },
      });
    },
  );
});
