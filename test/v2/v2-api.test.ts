import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreationSlots } from '../../src/use-cases/creation/slots.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { taskJobId } from '../../src/use-cases/creation/schedule.js';
import { processEventId } from '../../src/storage/models/import-event.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  TEAM,
  until,
  type Api,
  type TestWorkers,
} from '../creation/support.js';
import { eventNames, inMs, v2For, type V2 } from './support.js';

let t: TestApp;
let v1: Api;
let v2: V2;
let workers: TestWorkers;
const withTeam = (external: string) => ({ ...accountPayload(external), operations_team_name: TEAM });

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'v2-api' } });
  const tenant = await setupTenant(t);
  v1 = apiFor(t, tenant.headers);
  v2 = v2For(t, tenant.headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const statusOf = async (external: string) => (await v2.status(external)).json();
const settled = (external: string, wanted: string, timeoutMs?: number) =>
  until(
    async () => {
      const body = await statusOf(external);
      return body.status === wanted ? body : null;
    },
    `${external} ${wanted}`,
    timeoutMs,
  );

describe('validate', () => {
  it('answers 200 with an empty body for a valid account and task parameters', async () => {
    const res = await v2.validate({ payload: withTeam('V-OK'), task_params: { is_dry_run: true } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('');
  });

  it('keeps v1 paths for the account, puts task parameters under task_params. and a bad payload at payload', async () => {
    const bad = { ...withTeam('V-BAD'), customers: [{ account_roles: ['ACCOUNT_HOLDER'], email: 'nope' }] };
    const res = await v2.validate({ payload: bad, task_params: { is_dry_run: 'yes', surprise: 1 } });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe('account_failed_validation');
    const attrs = body.errors.map((e: { attr: string }) => e.attr);
    expect(attrs).toEqual(
      expect.arrayContaining(['customers.0.email', 'task_params.is_dry_run', 'task_params.surprise']),
    );
    expect(attrs.some((a: string) => a.startsWith('payload.'))).toBe(false);

    const missing = await v2.validate({ task_params: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors).toEqual([expect.objectContaining({ code: 'required', attr: 'payload' })]);
    const notObject = await v2.validate({ payload: [1] });
    expect(notObject.json().errors).toEqual([expect.objectContaining({ attr: 'payload' })]);
  });
});

describe('schedule refusals change nothing', () => {
  it('window rules: in the past, too far, end before start', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [
        { schedule_window_start: inMs(-3_600_000) },
        'schedule_window_start_in_past',
        'task_params.schedule_window_start',
      ],
      [
        { schedule_window_end: inMs(5 * 24 * 3600_000) },
        'schedule_window_end_too_far_in_future',
        'task_params.schedule_window_end',
      ],
      [
        { schedule_window_start: inMs(3_600_000), schedule_window_end: inMs(1_800_000) },
        'schedule_window_start__after_end',
        'task_params.schedule_window_end',
      ],
    ];
    for (const [params, code, attr] of cases) {
      const res = await v2.schedule(withTeam('W-1'), params);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'import_process_failed_validation',
        domain: 'import_process',
      });
      expect(res.json().errors).toEqual([expect.objectContaining({ code, attr })]);
    }
    expect((await v2.status('W-1')).statusCode).toBe(404);
    expect((await v2.status('W-1')).json()).toEqual({ detail: expect.any(String), code: 'not_found' });
  });

  it('task_params is required; account errors keep their v1 paths', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/data-import/accounts/',
      headers: (v2 as unknown as { h?: never }).h ?? {},
      payload: { payload: withTeam('W-2') },
    });
    // Without a token first: 401; the refusal with one is below.
    expect(res.statusCode).toBe(401);
    const noParams = await v2.validate({ payload: { ...withTeam('W-2'), billing_postcode: '1' } });
    expect(noParams.json().errors).toEqual([expect.objectContaining({ attr: 'billing_postcode' })]);
  });

  it('needs a team: none named and no default, or a team that does not exist', async () => {
    const none = await v2.schedule(accountPayload('T-1'));
    expect(none.statusCode).toBe(400);
    expect(none.json()).toMatchObject({
      code: 'operations_team_should_be_provided',
      errors: [{ code: 'operations_team_should_be_provided', attr: 'operations_team_name' }],
    });
    const unknown = await v2.schedule({ ...accountPayload('T-1'), operations_team_name: 'Nobody' });
    expect(unknown.json()).toMatchObject({
      code: 'operations_team_name_does_not_exist',
      errors: [{ attr: 'operations_team_name' }],
    });
    expect((await v2.status('T-1')).statusCode).toBe(404);
    expect(await t.app.storage.processes.loadStaged(processKey(SUPPLIER, 'T-1'))).toBeNull();
  });
});

describe('scheduled creation', () => {
  it('runs at once without a window: CREATED, SCHEDULED, STARTED, PROCESSED; v1 agrees', async () => {
    const res = await v2.schedule(withTeam('S-1'), { is_dry_run: false });
    expect(res.statusCode).toBe(201);
    expect(res.body).toBe('');
    const done = await settled('S-1', 'PROCESSED');
    expect(done.kraken_identifier).toMatch(/^A-[0-9A-F]{8}$/);
    expect(done.latest_event).toMatchObject({
      event: 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
      data: { kraken_account_number: done.kraken_identifier },
    });
    expect(done.latest_error).toBeNull();
    expect(done.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(eventNames((await v2.events('S-1')).json())).toEqual([
      'CREATED',
      'SCHEDULED',
      'STARTED',
      'PROCESSED',
    ]);
    expect((await v1.status('S-1')).json()).toEqual({
      status: 'COMPLETED',
      kraken_account_number: done.kraken_identifier,
    });

    const again = await v2.schedule(withTeam('S-1'));
    expect(again.statusCode).toBe(400);
    expect(again.json()).toEqual({
      non_field_errors: {
        detail: expect.any(String),
        code: 'account_import_process_already_imported',
      },
      account_id: done.kraken_identifier,
    });
  });

  it('a window in the future: PENDING until it starts, then PROCESSED', async () => {
    const start = inMs(2_500);
    expect((await v2.schedule(withTeam('S-2'), { schedule_window_start: start })).statusCode).toBe(201);
    const pending = await statusOf('S-2');
    expect(pending).toMatchObject({
      status: 'PENDING',
      kraken_identifier: null,
      latest_event: {
        event: 'EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED',
        data: { schedule_window_start: start, is_dry_run: false },
      },
    });
    const done = await settled('S-2', 'PROCESSED');
    const started = (await v2.events('S-2'))
      .json()
      .find((e: { event: string }) => e.event.endsWith('STARTED'));
    expect(Date.parse(started.occurred_at)).toBeGreaterThanOrEqual(Date.parse(start));
    expect(done.kraken_identifier).toMatch(/^A-/);
  });

  it('a task whose job was lost (a Redis failover) gets it back when its status is read, and runs', async () => {
    const start = inMs(3_000);
    expect((await v2.schedule(withTeam('S-LOST'), { schedule_window_start: start })).statusCode).toBe(201);
    const key = processKey(SUPPLIER, 'S-LOST');
    const queue = t.app.queues.queue('account-creation');
    // The SCHEDULED event is at position 1 (after CREATED): the task's id, and its job's.
    expect(await queue.getJobState(taskJobId(key, 1))).toBe('delayed');
    // Gone, as the old master's unreplicated writes are after a failover.
    await queue.remove(taskJobId(key, 1));
    expect(await queue.getJobState(taskJobId(key, 1))).toBe('unknown');
    expect((await statusOf('S-LOST')).status).toBe('PENDING');
    expect(await queue.getJobState(taskJobId(key, 1))).toBe('delayed');
    const done = await settled('S-LOST', 'PROCESSED');
    expect(done.kraken_identifier).toMatch(/^A-/);
    expect(eventNames((await v2.events('S-LOST')).json())).toEqual([
      'CREATED',
      'SCHEDULED',
      'STARTED',
      'PROCESSED',
    ]);
  });

  it('a cancelled task never runs; the staged data stays and a v1 create works', async () => {
    const start = inMs(2_000);
    await v2.schedule(withTeam('C-1'), { schedule_window_start: start });
    const cancelled = await v2.cancel('C-1');
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'CANCELLED', kraken_identifier: null });
    expect((await v2.cancel('C-1')).json().code).toBe('import_process_not_cancellable');
    // A witness scheduled for the same moment: once it ran, the cancelled task's time has passed too.
    await v2.schedule(withTeam('C-WITNESS'), { schedule_window_start: start });
    await settled('C-WITNESS', 'PROCESSED');
    expect((await statusOf('C-1')).status).toBe('CANCELLED');
    expect((await v1.status('C-1')).json().status).toBe('UNKNOWN');
    expect(await t.app.db.models.Account.exists({ externalAccountNumber: 'C-1' })).toBeNull();
    expect(await t.app.storage.processes.loadStaged(processKey(SUPPLIER, 'C-1'))).not.toBeNull();

    expect((await v1.create('C-1')).statusCode).toBe(201);
    expect(eventNames((await v2.events('C-1')).json())).toEqual([
      'CREATED',
      'SCHEDULED',
      'CANCELLED',
      'STARTED',
      'PROCESSED',
    ]);
  });

  it('a started or finished task cannot be cancelled', async () => {
    await v2.schedule(withTeam('C-2'));
    await settled('C-2', 'PROCESSED');
    const res = await v2.cancel('C-2');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'import_process_not_cancellable', errors: [] });
  });

  it('scheduling again before the start replaces the payload and the window', async () => {
    await v2.schedule(withTeam('R-1'), { schedule_window_start: inMs(3_600_000) });
    const soon = inMs(1_000);
    await v2.schedule({ ...withTeam('R-1'), billing_name: 'Replaced' }, { schedule_window_start: soon });
    await settled('R-1', 'PROCESSED');
    const names = eventNames((await v2.events('R-1')).json());
    expect(names).toEqual(['CREATED', 'SCHEDULED', 'SCHEDULED', 'STARTED', 'PROCESSED']);
    const account = await t.app.db.models.Account.findOne({ externalAccountNumber: 'R-1' }).lean();
    expect(account?.billingName).toBe('Replaced');
  });

  it('a dry run: DRY_RUN_SUCCEEDED, nothing created, the staged data stays', async () => {
    await v2.schedule(withTeam('D-1'), { is_dry_run: true });
    const done = await settled('D-1', 'DRY_RUN_SUCCEEDED');
    expect(done.kraken_identifier).toBeNull();
    // The outcome is recorded before the task's job ends: v1 says IN_PROGRESS until then (the job is still
    // running), then UNKNOWN (nothing created).
    await until(async () => (await v1.status('D-1')).json().status !== 'IN_PROGRESS', 'the task job to end');
    expect((await v1.status('D-1')).json().status).toBe('UNKNOWN');
    expect(await t.app.db.models.Account.exists({ externalAccountNumber: 'D-1' })).toBeNull();
    expect((await v1.create('D-1')).statusCode).toBe(201);
  });

  it('uses the supplier default team when the payload names none', async () => {
    const team = await t.app.db.models.OperationsTeam.findOne({ name: TEAM }).lean();
    await t.app.db.models.ImportSupplier.updateOne(
      { code: SUPPLIER },
      { $set: { defaultOperationsTeamId: team!._id } },
    );
    try {
      // The supplier is cached by the API for AUTH_CACHE_TTL_MS: retry until it is seen.
      await until(async () => (await v2.schedule(accountPayload('DT-1'))).statusCode === 201, 'default team');
      await settled('DT-1', 'PROCESSED');
      const account = await t.app.db.models.Account.findOne({ externalAccountNumber: 'DT-1' }).lean();
      expect(account?.operationsTeamId?.toString()).toBe(team!._id.toString());
    } finally {
      await t.app.db.models.ImportSupplier.updateOne(
        { code: SUPPLIER },
        { $set: { defaultOperationsTeamId: null } },
      );
    }
  });
});

describe('v1 and v2 share one state and history', () => {
  it('v1 stage is PENDING (CREATED); then a v2 schedule creates it', async () => {
    expect((await v1.stage(withTeam('I-1'))).statusCode).toBe(201);
    expect(await statusOf('I-1')).toMatchObject({
      status: 'PENDING',
      latest_event: { event: 'EVENT_ACCOUNT_IMPORT_PROCESS_CREATED', data: {} },
    });
    await v2.schedule(withTeam('I-1'));
    await settled('I-1', 'PROCESSED');
    expect(eventNames((await v2.events('I-1')).json())).toEqual([
      'CREATED',
      'SCHEDULED',
      'STARTED',
      'PROCESSED',
    ]);
  });

  it('v2 schedule then v1 create before the window: 201, and the task then ends without effect', async () => {
    const start = inMs(2_000);
    await v2.schedule(withTeam('I-2'), { schedule_window_start: start });
    const created = await v1.create('I-2');
    expect(created.statusCode).toBe(201);
    await v2.schedule(withTeam('I-2-WITNESS'), { schedule_window_start: start });
    await settled('I-2-WITNESS', 'PROCESSED');
    const status = await statusOf('I-2');
    expect(status).toMatchObject({
      status: 'PROCESSED',
      kraken_identifier: created.json().kraken_account_number,
    });
    expect(eventNames((await v2.events('I-2')).json())).toEqual([
      'CREATED',
      'SCHEDULED',
      'STARTED',
      'PROCESSED',
    ]);
  });

  it('while a creation runs: v2 schedule and v1 create both answer account_import_in_progress, changing nothing', async () => {
    await v1.stage(withTeam('I-3'));
    const models = t.app.db.models;
    const process = await models.AccountImportProcess.findById(processKey(SUPPLIER, 'I-3')).lean();
    const identity = {
      key: process!._id,
      organisationId: process!.organisationId,
      importSupplier: SUPPLIER,
      externalAccountNumber: 'I-3',
    };
    const slots = new CreationSlots(t.app.redis, t.config);
    // A v1 create queued, not started yet: only its slot tells.
    await slots.acquire(identity.key, 'api');
    const queued = await v2.schedule(withTeam('I-3'));
    expect(queued.json().code).toBe('account_import_in_progress');
    await slots.release(identity.key);
    // A run in progress: its STARTED recorded, its slot held.
    await t.app.storage.events.append(
      identity,
      () => ({ event: { kind: 'STARTED', data: {}, run: 'elsewhere' }, result: null }),
      new Date(),
    );
    await slots.acquire(identity.key, 'api');
    try {
      const before = await t.app.storage.processes.loadStaged(identity.key);
      expect(before?.text).toContain('"I-3"');
      const scheduled = await v2.schedule({ ...withTeam('I-3'), billing_name: 'Changed' });
      expect(scheduled.statusCode).toBe(400);
      expect(scheduled.json().code).toBe('account_import_in_progress');
      expect(await t.app.storage.processes.loadStaged(identity.key)).toEqual(before);
      expect((await v1.create('I-3')).json().code).toBe('account_import_in_progress');
      expect((await statusOf('I-3')).status).toBe('IN_PROGRESS');
    } finally {
      await slots.release(identity.key);
    }
  });

  it('a failed v1 create is ERRORED with its reason in latest_error', async () => {
    await v1.stage(withTeam('I-4'));
    await t.ops.skipAccount(SUPPLIER, 'I-4');
    const res = await v1.create('I-4');
    expect(res.json().code).toBe('account_import_process_skipped');
    expect(await statusOf('I-4')).toMatchObject({
      status: 'ERRORED',
      latest_error: { code: 'account_import_process_skipped', domain: 'import_process' },
      latest_event: { event: 'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED' },
    });
  });

  it('a v1 dry run records nothing', async () => {
    await v1.stage(withTeam('I-5'));
    expect((await v1.create('I-5', { dry_run: true })).json().code).toBe('dry_run_rolled_back');
    expect(eventNames((await v2.events('I-5')).json())).toEqual(['CREATED']);
  });
});

describe('a task whose SCHEDULED event never came', () => {
  it('gives its position up (VOID); the next schedule records its task after it and runs', async () => {
    await v1.stage(withTeam('V-1'));
    const key = processKey(SUPPLIER, 'V-1');
    // As if a schedule had queued its job for position 1 and died before recording its task.
    await t.app.queues
      .queue('account-creation')
      .add('run-import-task', { processId: key, taskId: 1, requestId: 'test' }, { jobId: taskJobId(key, 1) });
    await until(
      async () =>
        (await t.app.db.models.ImportEvent.findById(processEventId(key, 1)).lean())?.event === 'VOID',
      'the position to be voided',
    );
    expect((await statusOf('V-1')).status).toBe('PENDING');
    await v2.schedule(withTeam('V-1'));
    await settled('V-1', 'PROCESSED');
    expect(eventNames((await v2.events('V-1')).json())).toEqual([
      'CREATED',
      'SCHEDULED',
      'STARTED',
      'PROCESSED',
    ]);
    expect((await t.app.db.models.ImportEvent.findById(processEventId(key, 2)).lean())?.event).toBe(
      'SCHEDULED',
    );
  });
});

describe('tenancy', () => {
  it("another organisation cannot read, list the events of or cancel an account's import", async () => {
    await v2.schedule(withTeam('TN-1'), { schedule_window_start: inMs(3_600_000) });
    const other = await createTenant(t, 'Other Org', 'OTHER_SUPPLIER');
    const theirs = v2For(t, other.headers);
    for (const res of [
      await theirs.status('TN-1'),
      await theirs.events('TN-1'),
      await theirs.cancel('TN-1'),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('not_found');
    }
    expect((await statusOf('TN-1')).status).toBe('PENDING');
  });
});
