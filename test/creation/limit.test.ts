import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { CreationSlots, slotMember } from '../../src/use-cases/creation/slots.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { jobId } from '../../src/jobs/catalog.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  until,
  type TestWorkers,
} from './support.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function appWith(env: Record<string, string>) {
  const t: TestApp = await startTestApp({ env: { TEST_LABEL: 'limit', ...env } });
  cleanups.push(() => t.close());
  const api = apiFor(t, (await setupTenant(t)).headers);
  const workers = async () => {
    const w: TestWorkers = await startTestWorkers(t.config);
    cleanups.push(() => w.stop());
    return w;
  };
  return { t, api, workers, slots: new CreationSlots(t.app.redis, t.config) };
}

describe('concurrency limit', () => {
  it('with the limit at 5 and no worker, 3 of 8 creates get 429 at once; the 5 finish once a worker starts', async () => {
    const { api, workers, slots } = await appWith({
      ACCOUNT_CREATION_CONCURRENCY: '5',
      ACCOUNT_CREATION_WAIT_MS: '300000',
    });
    const externals = Array.from({ length: 8 }, (_, i) => `LIM-${i}`);
    for (const ext of externals) expect((await api.stage(accountPayload(ext))).statusCode).toBe(201);

    const answers = new Map<string, LightMyRequestResponse>();
    const requests = externals.map((ext) => api.create(ext).then((res) => void answers.set(ext, res)));
    await until(async () => answers.size === 3, 'three immediate answers');
    const refused = [...answers.keys()];
    for (const res of answers.values()) {
      expect(res.statusCode).toBe(429);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.json()).toEqual({
        detail: 'Too many accounts are being created at once. Retry after others finish.',
        code: 'concurrency_limit_exceeded',
      });
    }
    // Not queued: the refused accounts have no job and are not in progress.
    expect(await slots.inFlight()).toBe(5);
    for (const ext of refused) expect((await api.status(ext)).json().status).toBe('UNKNOWN');
    const waiting = externals.filter((e) => !refused.includes(e));
    expect((await api.status(waiting[0]!)).json()).toEqual({
      status: 'IN_PROGRESS',
      kraken_account_number: '',
    });
    // A second create of an account being created never starts a second creation.
    const second = await api.create(waiting[0]!);
    expect(second.statusCode).toBe(400);
    expect(second.json().code).toBe('account_import_in_progress');
    expect(answers.size).toBe(3);

    await workers();
    await Promise.all(requests);
    for (const ext of waiting) {
      expect(answers.get(ext)!.statusCode).toBe(201);
      expect(answers.get(ext)!.json().kraken_account_number).toMatch(/^A-[0-9A-F]{8}$/);
    }
    for (const ext of refused) expect((await api.create(ext)).statusCode).toBe(201);
    expect(await slots.peak()).toBe(5);
    await until(async () => (await slots.inFlight()) === 0, 'every slot released');
  });

  it('with the limit at 0 (unlimited) accepts every create', async () => {
    const { api, workers, slots } = await appWith({ ACCOUNT_CREATION_CONCURRENCY: '0' });
    await workers();
    for (let i = 0; i < 12; i++) await api.stage(accountPayload(`UNL-${i}`));
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => api.create(`UNL-${i}`)));
    expect(results.map((r) => r.statusCode)).toEqual(Array(12).fill(201));
    expect(await slots.peak()).toBeGreaterThan(0);
  });
});

describe('bounded wait', () => {
  it('answers 503 account_creation_pending when the wait runs out; the job still runs and a later create says already imported', async () => {
    const { api, workers } = await appWith({ ACCOUNT_CREATION_WAIT_MS: '300' });
    await api.stage(accountPayload('WAIT-1'));
    const started = Date.now();
    const res = await api.create('WAIT-1');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('10');
    expect(res.json()).toEqual({
      detail: 'Account creation is still running. Check its status or retry later.',
      code: 'account_creation_pending',
    });
    expect((await api.status('WAIT-1')).json()).toEqual({ status: 'IN_PROGRESS', kraken_account_number: '' });
    expect((await api.create('WAIT-1')).json().code).toBe('account_import_in_progress');

    await workers();
    const done = await until(async () => {
      const body = (await api.status('WAIT-1')).json() as { status: string; kraken_account_number: string };
      return body.status === 'COMPLETED' ? body : null;
    }, 'the queued creation to complete');
    const later = await api.create('WAIT-1');
    expect(later.statusCode).toBe(400);
    expect(later.json()).toMatchObject({
      code: 'account_import_process_already_imported',
      external_account_number: 'WAIT-1',
      kraken_account_number: done.kraken_account_number,
    });
  });
});

describe('job ids', () => {
  it("a create after an attempt's job finished claims the next attempt, even while BullMQ still shows that job pending", async () => {
    const { t, api, slots } = await appWith({ ACCOUNT_CREATION_WAIT_MS: '300' });
    await api.stage(accountPayload('DONE-1'));
    const member = slotMember(SUPPLIER, 'DONE-1');
    const id = (attempt: number) =>
      jobId('create', encodeURIComponent(processKey(SUPPLIER, 'DONE-1')), String(attempt));
    const queue = t.app.queues.queue('account-creation');
    // Attempt 1's job: it has freed its slot and marked itself finished (as a worker does just before BullMQ
    // moves the job to completed), but the queue still shows it waiting.
    expect((await slots.acquire(member, 'api', { claimFirst: true })).attempt).toBe(1);
    await queue.add(
      'create-account',
      {
        processId: processKey(SUPPLIER, 'DONE-1'),
        operationsTeamId: '0'.repeat(24),
        dryRun: false,
        attempt: 1,
        requestId: 'r',
      },
      { jobId: id(1) },
    );
    await slots.finish(member, 1);

    // No worker runs, so the create waits out and says which job it queued.
    expect((await api.create('DONE-1')).statusCode).toBe(503);
    expect(await queue.getJobState(id(2))).toBe('waiting');
    const process = await t.app.db.models.AccountImportProcess.findById(
      processKey(SUPPLIER, 'DONE-1'),
    ).lean();
    expect(process?.creationJobId).toBe(id(2));
    expect((await queue.getJob(id(2)))?.data).toMatchObject({ attempt: 2, dryRun: false });
  });
});
