import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { taskJobId } from '../../src/use-cases/creation/schedule.js';
import { PlanGate } from '../../src/use-cases/cutover/plan-gate.js';
import { checkPlanRisks } from '../../src/use-cases/cutover/plan.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  until,
  type Api,
  type TestWorkers,
} from '../creation/support.js';
import { inMs, v2For, type V2 } from '../v2/support.js';
import { receiverPool } from '../webhooks/receiver.js';
import { planFor, withTeam, type PlanApi } from './support.js';

let t: TestApp;
let v1: Api;
let v2: V2;
let plan: PlanApi;
let mine: Record<string, string>;
let workers: TestWorkers;
const receivers = receiverPool();
const ORG = 'Plan Org';

beforeAll(async () => {
  t = await startTestApp({
    env: { TEST_LABEL: 'cutover-api', WEBHOOK_ALLOW_PRIVATE: 'true', COHORT_PLAN_CHECK_INTERVAL_MS: '200' },
  });
  const { headers } = await setupTenant(t, ORG);
  mine = headers;
  v1 = apiFor(t, headers);
  v2 = v2For(t, headers);
  plan = planFor(t, headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await receivers.closeAll();
  await workers?.stop();
  await t?.close();
});

const attrs = (body: { errors: { attr: string; code: string }[] }) =>
  body.errors.map((e) => [e.attr, e.code]);

describe('the cohort plan API', () => {
  it('refuses bad bodies with every error at its path; another organisation’s supplier is 404', async () => {
    expect((await plan.get()).json()).toMatchObject({ code: 'not_found' });
    const empty = await plan.put({});
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toMatchObject({ code: 'request_failed_validation' });
    expect(attrs(empty.json())).toEqual([['expected_accounts', 'required']]);
    const bad = await plan.put({
      expected_accounts: 0,
      canary_accounts: 2.5,
      breaker: { error_percent: 0, over_accounts: 5 },
      extra: true,
    });
    expect(bad.statusCode).toBe(400);
    expect(attrs(bad.json()).map(([attr]) => attr)).toEqual([
      'breaker.error_percent',
      'breaker.over_accounts',
      'canary_accounts',
      'expected_accounts',
      'extra',
    ]);
    expect(attrs(bad.json())).toContainEqual(['canary_accounts', 'invalid_integer']);
    expect(attrs(bad.json())).toContainEqual(['extra', 'unexpected_field']);
    const past = await plan.put({
      expected_accounts: 10,
      schedule_window_start: inMs(-120_000),
      schedule_window_end: inMs(-120_000),
    });
    expect(attrs(past.json())).toEqual([
      ['schedule_window_end', 'schedule_window_start__after_end'],
      ['schedule_window_start', 'schedule_window_start_in_past'],
    ]);
    const far = await plan.put({ expected_accounts: 10, schedule_window_end: inMs(5 * 24 * 3600_000) });
    expect(attrs(far.json())).toEqual([['schedule_window_end', 'schedule_window_end_too_far_in_future']]);
    const format = await plan.put({ expected_accounts: 10, schedule_window_end: '2026-12-01 10:00' });
    expect(attrs(format.json())).toEqual([['schedule_window_end', 'invalid_datetime']]);
    expect((await plan.get()).statusCode).toBe(404);

    const other = await createTenant(t, 'Other Org', 'OTHER_SUPPLIER');
    const theirs = planFor(t, mine, 'OTHER_SUPPLIER');
    for (const res of [await theirs.put({ expected_accounts: 5 }), await theirs.get(), await theirs.pause()])
      expect([res.statusCode, res.json().code]).toEqual([404, 'import_supplier_not_found']);
    expect((await planFor(t, other.headers, 'OTHER_SUPPLIER').put({ expected_accounts: 5 })).statusCode).toBe(
      200,
    );
    // No plan yet: nothing to pause.
    expect((await plan.pause()).statusCode).toBe(404);
  });

  it(
    'paused: a v1 create is 400 with the reason, v2 tasks wait and run after resume; cohort.paused-v1 once per pause, signed',
    { timeout: 120_000 },
    async () => {
      const receiver = await receivers.start();
      const endpoint = await new WebhookOperations(t.app.storage, t.config).add(ORG, receiver.url, [
        'cohort.paused-v1',
        'cohort.at_risk-v1',
      ]);
      expect((await plan.put({ expected_accounts: 1_000 })).json()).toMatchObject({
        import_supplier_code: SUPPLIER,
        expected_accounts: 1_000,
        schedule_window_start: null,
        schedule_window_end: null,
        canary_accounts: null,
        breaker: null,
        status: 'ACTIVE',
      });
      // A rerun updates the plan, never adds a second.
      expect((await plan.put({ expected_accounts: 1_000 })).statusCode).toBe(200);
      expect(await t.app.db.models.CohortPlan.countDocuments({})).toBe(2);
      const long = await plan.pause({ reason: 'x'.repeat(201) });
      expect(attrs(long.json())).toEqual([['reason', 'max_length']]);
      const paused = await plan.pause({ reason: 'waiting for the billing freeze' });
      expect(paused.json()).toMatchObject({
        status: 'PAUSED',
        pause: { reason: 'operator', detail: 'waiting for the billing freeze', codes: [] },
      });
      expect((await plan.pause()).json().pause.detail).toBe('waiting for the billing freeze');

      expect((await v1.stage(accountPayload('PA-V1'))).statusCode).toBe(201);
      const refused = await v1.create('PA-V1');
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toMatchObject({ code: 'import_supplier_migration_not_ongoing', errors: [] });
      expect(refused.json().detail).toContain('paused (operator)');

      const externals = ['PA-0', 'PA-1', 'PA-2', 'PA-3', 'PA-4'];
      for (const e of externals) expect((await v2.schedule(withTeam(e))).statusCode).toBe(201);
      // Each task ran, was held back by the plan and waits in the delayed set: never failed for it.
      const queue = t.app.queues.queue('account-creation');
      await until(async () => {
        const jobs = await Promise.all(
          externals.map((e) => queue.getJob(taskJobId(processKey(SUPPLIER, e), 1))),
        );
        const states = await Promise.all(jobs.map((j) => j?.getState()));
        return jobs.every((j) => j?.processedOn) && states.every((s) => s === 'delayed');
      }, 'the tasks to be held back');
      for (const e of externals) expect((await v2.status(e)).json().status).toBe('PENDING');

      expect((await plan.resume()).json()).toMatchObject({ status: 'ACTIVE', pause: null });
      for (const e of externals)
        await until(async () => (await v2.status(e)).json().status === 'PROCESSED', `${e} created`);
      expect((await v1.create('PA-V1')).statusCode).toBe(201);

      // A second pause is a second event.
      expect((await plan.pause()).json().pause).toMatchObject({
        reason: 'operator',
        detail: 'an operator paused the cohort',
      });
      expect((await plan.resume()).statusCode).toBe(200);
      await until(async () => receiver.ids().size >= 2, 'both cohort.paused-v1');
      const verifier = new Webhook(endpoint.secret);
      const bodies = receiver.received.map(
        (r) =>
          verifier.verify(r.body, {
            'webhook-id': r.id,
            'webhook-timestamp': String(r.headers['webhook-timestamp']),
            'webhook-signature': String(r.headers['webhook-signature']),
          }) as { id: string; type: string; data: Record<string, unknown> },
      );
      expect(new Set(bodies.map((b) => b.id)).size).toBe(2);
      expect(bodies.map((b) => b.type)).toEqual(['cohort.paused-v1', 'cohort.paused-v1']);
      expect(bodies[0]!.data).toEqual({
        import_supplier: SUPPLIER,
        reason: 'operator',
        detail: 'waiting for the billing freeze',
        counts: { processed: 0, errored: 0, in_flight: 0 },
        codes: [],
      });
      expect(
        await t.app.db.models.ImportEvent.countDocuments({ _id: { $regex: `^cohort:${SUPPLIER}@paused:` } }),
      ).toBe(2);
    },
  );

  it(
    'cohort.at_risk-v1 fires once when the window is shortened below the projection',
    { timeout: 120_000 },
    async () => {
      const receiver = await receivers.start();
      await new WebhookOperations(t.app.storage, t.config).add(ORG, receiver.url, ['cohort.at_risk-v1']);
      // The rate comes from the accounts the test before created (the file's tests run in order, on one supplier):
      // 6 accounts over the plan's run so far (seconds): 994 left finish in minutes, inside a window of almost 4
      // days. While none finishes the projection only moves later.
      const wide = await plan.put({
        expected_accounts: 1_000,
        schedule_window_end: inMs(4 * 24 * 3600_000 - 60_000),
      });
      expect(wide.statusCode).toBe(200);
      const inside = await until(async () => {
        const body = (await plan.progress()).json();
        return body.plan?.finishes_in_window === true ? body.plan : null;
      }, 'a projection inside the window');
      expect(inside.projected_finish).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      // A window ending halfway to the projection.
      const end = inMs((Date.parse(inside.projected_finish) - Date.now()) / 2);
      expect((await plan.put({ expected_accounts: 1_000, schedule_window_end: end })).statusCode).toBe(200);
      await until(async () => receiver.ids().size >= 1, 'cohort.at_risk-v1');
      const event = JSON.parse(receiver.received[0]!.body) as { type: string; data: Record<string, unknown> };
      expect(event.type).toBe('cohort.at_risk-v1');
      expect(event.data).toMatchObject({ import_supplier: SUPPLIER, schedule_window_end: end });
      expect(Date.parse(event.data.projected_finish as string)).toBeGreaterThan(Date.parse(end));
      // Checked again (as every worker does, every interval): no second event while it stays at risk.
      const deps = {
        storage: t.app.storage,
        gate: new PlanGate(t.app.redis, t.config.QUEUE_PREFIX),
        clock: () => new Date(),
        relay: async () => undefined,
      };
      expect(await checkPlanRisks(deps, 'test')).toBe(0);
      expect(await checkPlanRisks(deps, 'test')).toBe(0);
      expect(
        await t.app.db.models.ImportEvent.countDocuments({ _id: { $regex: `^cohort:${SUPPLIER}@at_risk:` } }),
      ).toBe(1);
      expect((await plan.progress()).json().plan).toMatchObject({
        finishes_in_window: false,
        schedule_window_end: end,
      });
    },
  );
});
