import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskJobId } from '../../src/use-cases/creation/schedule.js';
import { onWindowExpired } from '../../src/domain/import-process/state.js';
import type { JobData } from '../../src/jobs/catalog.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  TEAM,
  until,
  type TestWorkers,
} from '../creation/support.js';
import { eventNames, inMs, v2For, type V2 } from './support.js';

// What a scheduled task reads of its process's history. A worker that has no head of the process cached (its
// own connection, as a worker pod) reads, on the usual path, only the task's own SCHEDULED entry: the schedule
// told it (`freshBefore`) that nothing before the task outlives the SCHEDULED, and while its window is open it
// assumes nothing came after it, which the insert of its STARTED proves. Every other case reads the whole
// history, as before.

let t: TestApp;
let v2: V2;
let workers: TestWorkers;
let queue: Queue;
/** The positions of history entries the worker connection read, per process key, in order. */
const reads = new Map<string, number[]>();
/** The same for the API's connection (the schedules). */
const scheduleReads = new Map<string, number[]>();

/** Records, per process key, the history positions a connection reads. */
const recordReads =
  (into: Map<string, number[]>) => (collection: string, method: string, filter: unknown) => {
    const id = (filter as { _id?: unknown } | undefined)?._id;
    if (collection !== 'import_events' || method !== 'findOne' || typeof id !== 'string') return;
    const at = id.lastIndexOf('@');
    const key = id.slice(0, at);
    into.set(key, [...(into.get(key) ?? []), Number(id.slice(at + 1))]);
  };

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'v2-task-reads' } });
  v2 = v2For(t, (await setupTenant(t)).headers);
  queue = t.app.queues.queue('account-creation');
  // Creation only: the webhook workers read events of their own.
  workers = await startTestWorkers(t.config, ['account-creation']);
  workers.db.conn.set('debug', recordReads(reads));
  t.app.db.conn.set('debug', recordReads(scheduleReads));
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

/** The history of an account whose first task was cancelled and whose next schedule created it. */
const CREATED_AFTER_CANCEL = ['CREATED', 'SCHEDULED', 'CANCELLED', 'SCHEDULED', 'STARTED', 'PROCESSED'];
const keyOf = (ext: string) => processKey(SUPPLIER, ext);
const readsOf = (ext: string) => reads.get(keyOf(ext)) ?? [];
const schedule = async (ext: string, params: Record<string, unknown> = {}) => {
  const res = await v2.schedule({ ...accountPayload(ext), operations_team_name: TEAM }, params);
  expect(res.statusCode).toBe(201);
};
const history = async (ext: string) => eventNames((await v2.events(ext)).json());
/** The result of a task's job once it completed. */
const resultOf = (ext: string, taskId: number) =>
  until(async () => {
    const job = await queue.getJob(taskJobId(keyOf(ext), taskId));
    return (await job?.isCompleted()) ? (job!.returnvalue as Record<string, unknown>) : null;
  }, `task ${taskId} of ${ext}`);
const events = () => t.app.storage.events;
const identityOf = async (ext: string) => {
  const process = (await t.app.db.models.AccountImportProcess.findById(keyOf(ext)).lean())!;
  return {
    key: process._id,
    organisationId: process.organisationId,
    importSupplier: SUPPLIER,
    externalAccountNumber: ext,
  };
};
/** Queues a task's job due now, with the data given (as a schedule would, or an older deployment's). */
const queueTask = (ext: string, data: Omit<JobData<'run-import-task'>, 'processId' | 'requestId'>) =>
  queue.add(
    'run-import-task',
    { processId: keyOf(ext), requestId: 'test', ...data },
    { jobId: taskJobId(keyOf(ext), data.taskId) },
  );

describe('the usual path', () => {
  it('a task reads its own SCHEDULED entry only, not the history before nor a free position after', async () => {
    const exts = ['U-1', 'U-2', 'U-3'];
    // A window that starts a little later: the SCHEDULED entry is written before the job is due.
    for (const ext of exts) await schedule(ext, { schedule_window_start: inMs(1_500) });
    for (const ext of exts) expect((await resultOf(ext, 1)).ok).toBe(true);
    for (const ext of exts) {
      // The schedule of an account without a process reads no history either: nothing can be creating it.
      expect(scheduleReads.get(keyOf(ext)) ?? []).toEqual([]);
      // Only its own entry: nothing after it is assumed, which the STARTED insert at position 2 proves.
      expect(readsOf(ext)).toEqual([1]);
      expect(await history(ext)).toEqual(['CREATED', 'SCHEDULED', 'STARTED', 'PROCESSED']);
    }
  });

  it('a task due at once is queued a moment after its schedule, so that its entry is usually written first', async () => {
    await schedule('N-1');
    const job = (await queue.getJob(taskJobId(keyOf('N-1'), 1)))!;
    expect(job.opts.delay).toBeGreaterThan(0);
    expect(job.opts.delay).toBeLessThanOrEqual(100);
    expect((await resultOf('N-1', 1)).ok).toBe(true);
    expect(await history('N-1')).toEqual(['CREATED', 'SCHEDULED', 'STARTED', 'PROCESSED']);
  });
});

describe('everything else reads the whole history', () => {
  it('a job queued by an older deployment (no freshBefore) still runs', async () => {
    await schedule('O-1', { schedule_window_start: inMs(3_000) });
    const job = (await queue.getJob(taskJobId(keyOf('O-1'), 1)))!;
    expect(job.data.freshBefore).toBe(true);
    // Long before it is due: the data an older deployment queued.
    await job.updateData({ processId: keyOf('O-1'), taskId: 1, requestId: 'old' });
    expect((await resultOf('O-1', 1)).ok).toBe(true);
    expect(readsOf('O-1')).toEqual([0, 1, 2]);
    expect(await history('O-1')).toEqual(['CREATED', 'SCHEDULED', 'STARTED', 'PROCESSED']);
  });

  it('a VOID at the task position: the task is superseded, and the next schedule runs', async () => {
    await schedule('V-1', { schedule_window_start: inMs(3_600_000) });
    await v2.cancel('V-1');
    // As if a schedule had queued its task for position 3 and given up before recording it.
    expect(await events().voidPosition(await identityOf('V-1'), 3, new Date())).toBe(true);
    await queueTask('V-1', { taskId: 3, freshBefore: true });
    expect(await resultOf('V-1', 3)).toEqual({ ran: false, reason: 'superseded' });
    expect(readsOf('V-1')).toEqual([3, 0, 1, 2, 3, 4]);
    await schedule('V-1');
    expect((await resultOf('V-1', 4)).ok).toBe(true);
    expect(await history('V-1')).toEqual(CREATED_AFTER_CANCEL);
  });

  it('another event at the task position (a cancel that won it): the task is superseded', async () => {
    await schedule('C-1', { schedule_window_start: inMs(3_600_000) });
    await v2.cancel('C-1');
    // As if a schedule had queued its task for position 2 and lost the position to the cancel.
    await queueTask('C-1', { taskId: 2, freshBefore: true });
    expect(await resultOf('C-1', 2)).toEqual({ ran: false, reason: 'superseded' });
    expect(readsOf('C-1')).toEqual([2, 0, 1, 2, 3]);
    expect(await history('C-1')).toEqual(['CREATED', 'SCHEDULED', 'CANCELLED']);
  });

  it('a history that holds an error: the schedule says it is not fresh; the task reads it all', async () => {
    await schedule('E-1', { schedule_window_start: inMs(3_600_000) });
    // The task ends ERRORED (as when its window passes) while its job waits.
    await events().append(
      await identityOf('E-1'),
      (state) => ({ event: onWindowExpired(state, 1), result: null }),
      new Date(),
    );
    await schedule('E-1', { schedule_window_start: inMs(1_500) });
    expect((await queue.getJob(taskJobId(keyOf('E-1'), 3)))!.data.freshBefore).toBe(false);
    expect((await resultOf('E-1', 3)).ok).toBe(true);
    expect(readsOf('E-1')).toEqual([0, 1, 2, 3, 4]);
    expect((await v2.status('E-1')).json()).toMatchObject({
      status: 'PROCESSED',
      latest_error: { code: 'schedule_window_expired' },
    });
  });
});

describe('a task told the history before it is fresh still sees what came after it', () => {
  it('a cancel recorded after the schedule: superseded, from the task position on', async () => {
    await schedule('S-1', { schedule_window_start: inMs(3_600_000) });
    await v2.cancel('S-1');
    // The cancel removed the task's job; one that runs all the same (a removal is best effort) finds itself cancelled.
    await queueTask('S-1', { taskId: 1, freshBefore: true });
    expect(await resultOf('S-1', 1)).toEqual({ ran: false, reason: 'superseded' });
    expect(readsOf('S-1')).toEqual([1, 2, 3]);
    expect(await history('S-1')).toEqual(['CREATED', 'SCHEDULED', 'CANCELLED']);
  });

  it('a cancel recorded after the schedule, met while the window is open: superseded at its start, nothing written', async () => {
    await schedule('A-1', { schedule_window_start: inMs(1_000) });
    await v2.cancel('A-1');
    // The cancel removed the task's job; one that runs all the same once the window is open assumes nothing
    // came after its entry, and learns otherwise when its STARTED cannot take position 2.
    await queue.add(
      'run-import-task',
      { processId: keyOf('A-1'), requestId: 'test', taskId: 1, freshBefore: true },
      { jobId: taskJobId(keyOf('A-1'), 1), delay: 1_500 },
    );
    expect(await resultOf('A-1', 1)).toEqual({ ran: false, reason: 'superseded' });
    // Its entry first, never the history before it; after the failed insert, from position 2 on.
    expect(readsOf('A-1')[0]).toBe(1);
    expect(readsOf('A-1').slice(1)).toEqual(expect.arrayContaining([2, 3]));
    expect(readsOf('A-1')).not.toContain(0);
    expect(await history('A-1')).toEqual(['CREATED', 'SCHEDULED', 'CANCELLED']);
    // Its slot was given back: the next schedule runs.
    await schedule('A-1');
    expect((await resultOf('A-1', 3)).ok).toBe(true);
    expect(await history('A-1')).toEqual(CREATED_AFTER_CANCEL);
  });

  it('a replaced task: superseded; the task that replaced it runs', async () => {
    await schedule('R-1', { schedule_window_start: inMs(3_600_000) });
    await schedule('R-1', { schedule_window_start: inMs(1_500) });
    // The second schedule found the process: it looked for a creation in progress, from the head it knew on.
    expect(scheduleReads.get(keyOf('R-1'))).toEqual([2]);
    // The first task's job was removed by the replacement; one that runs all the same is superseded.
    await queueTask('R-1', { taskId: 1, freshBefore: true });
    expect(await resultOf('R-1', 1)).toEqual({ ran: false, reason: 'superseded' });
    expect((await resultOf('R-1', 2)).ok).toBe(true);
    expect(await history('R-1')).toEqual(['CREATED', 'SCHEDULED', 'SCHEDULED', 'STARTED', 'PROCESSED']);
  });
});
