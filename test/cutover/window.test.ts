import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processEventId } from '../../src/storage/models/import-event.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { taskJobId } from '../../src/use-cases/creation/schedule.js';
import { startTestApp, type TestApp } from '../support/app.js';
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
import { planFor, withTeam, type PlanApi } from './support.js';

// The plan's window: nothing starts after its end (v2 tasks wait, a v1 create is refused), and what did not
// start is created in a later window (the plan declared again), each account once.
let t: TestApp;
let v1: Api;
let v2: V2;
let plan: PlanApi;
let workers: TestWorkers;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'cutover-window', COHORT_PLAN_CHECK_INTERVAL_MS: '200' } });
  const { headers } = await setupTenant(t, 'Window Org');
  v1 = apiFor(t, headers);
  v2 = v2For(t, headers);
  plan = planFor(t, headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

describe('the plan’s window', () => {
  it('starts nothing after its end; a later window creates the rest once', { timeout: 120_000 }, async () => {
    const end = inMs(2_000);
    expect((await plan.put({ expected_accounts: 20, schedule_window_end: end })).statusCode).toBe(200);
    // Held while the cohort is scheduled, so that none starts before the window's end.
    expect((await plan.pause()).statusCode).toBe(200);
    const externals = Array.from({ length: 20 }, (_, i) => `WIN-${String(i).padStart(2, '0')}`);
    for (const e of externals) expect((await v2.schedule(withTeam(e))).statusCode).toBe(201);
    await until(async () => Date.now() > Date.parse(end) + 1_000, 'the window to end');
    expect((await plan.resume()).json().status).toBe('ACTIVE');

    // Nothing starts now: the tasks are held back (run, delayed again), a v1 create is refused with the reason.
    const queue = t.app.queues.queue('account-creation');
    const held = async () => {
      const jobs = await Promise.all(
        externals.map((e) => queue.getJob(taskJobId(processKey(SUPPLIER, e), 1))),
      );
      const runs = jobs.map((j) => j?.processedOn ?? 0);
      const states = await Promise.all(jobs.map((j) => j?.getState()));
      return runs.every((r) => r > Date.parse(end)) && states.every((s) => s === 'delayed');
    };
    await until(held, 'every task held back after the window');
    expect((await v1.stage(accountPayload('WIN-V1'))).statusCode).toBe(201);
    const refused = await v1.create('WIN-V1');
    expect(refused.json()).toMatchObject({ code: 'import_supplier_migration_not_ongoing' });
    expect(refused.json().detail).toContain("the plan's window has ended");
    for (const e of externals) expect((await v2.status(e)).json().status).toBe('PENDING');
    const models = t.app.db.models;
    expect(await models.Account.countDocuments({ externalAccountNumber: /^WIN-/ })).toBe(0);

    // Nothing was admitted after the end either.
    expect((await plan.get()).json()).toMatchObject({ counts: { processed: 0, in_flight: 0 } });

    // A later window: the rest is created, each once (the held tasks may be admitted before the answer).
    const later = await plan.put({ expected_accounts: 20, schedule_window_end: inMs(3_600_000) });
    expect(later.json()).toMatchObject({ status: 'ACTIVE' });
    for (const e of externals)
      await until(async () => (await v2.status(e)).json().status === 'PROCESSED', `${e} created`);
    expect((await v1.create('WIN-V1')).statusCode).toBe(201);
    expect(await models.Account.countDocuments({ externalAccountNumber: /^WIN-/ })).toBe(21);
    const after = await Promise.all(
      externals.map((e) => models.ImportEvent.exists({ _id: processEventId(processKey(SUPPLIER, e), 4) })),
    );
    expect(after).toEqual(externals.map(() => null));
  });
});
