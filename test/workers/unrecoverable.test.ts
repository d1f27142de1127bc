import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processKey } from '../../src/storage/processes/process-key.js';
import { jobCatalog, jobId, retention, type QueueName } from '../../src/jobs/catalog.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startSmtpServer,
  startTestWorkers,
  SUPPLIER,
  TEAM,
  until,
  type Api,
  type TestWorkers,
} from '../creation/support.js';

// Jobs that can never succeed fail on their first attempt (BullMQ's UnrecoverableError) instead of being
// retried: their catalogue options allow several attempts, so one attempt proves it.

let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let t: TestApp;
let api: Api;
let headers: Record<string, string>;
let workers: TestWorkers;
let verifiers: TestWorkers;

beforeAll(async () => {
  smtp = await startSmtpServer({ refuseRecipients: true });
  t = await startTestApp({ env: { TEST_LABEL: 'hopeless', SMTP_URL: smtp.url } });
  headers = (await setupTenant(t)).headers;
  api = apiFor(t, headers);
  workers = await startTestWorkers(t.config, ['account-creation', 'migration-email']);
  // A worker pod whose PAYMENT_VENDORS lacks SIMULATED, which the API (the tests' config) accepts.
  verifiers = await startTestWorkers({ ...t.config, PAYMENT_VENDORS: ['STRIPE'] }, ['payment-verification']);
});
afterAll(async () => {
  await verifiers?.stop();
  await workers?.stop();
  await t?.close();
  await smtp?.close();
});

const queue = (name: QueueName) => t.app.queues.queue(name);
const failedJob = (name: QueueName, match: (job: Job) => boolean, what: string) =>
  until(async () => (await queue(name).getJobs(['failed'])).find(match), what);

async function setRegion(region: string) {
  await t.app.db.models.ImportSupplier.updateOne({ code: SUPPLIER }, { $set: { region } });
}

describe('jobs that can never succeed', () => {
  it('fails an account creation at once when its supplier region has no profile, and frees the account', async () => {
    expect((await api.stage(accountPayload('HOPE-1'))).statusCode).toBe(201);
    // A supplier stored with a region the code does not know (the CLI now refuses to create one), changed
    // after the API accepted the request: the job is added as the API adds it.
    await setRegion('XX');
    try {
      const team = await t.app.db.models.OperationsTeam.findOne({ name: TEAM }).orFail();
      const spec = jobCatalog['create-account'];
      await queue(spec.queue).add(
        'create-account',
        {
          processId: processKey(SUPPLIER, 'HOPE-1'),
          operationsTeamId: team._id.toHexString(),
          dryRun: false,
          attempt: 0,
          requestId: 'hope-1',
        },
        { ...spec.options, ...retention, jobId: 'create-hope-1' },
      );
      const job = await failedJob(
        'account-creation',
        (j) => j.id === 'create-hope-1',
        'the create job to fail',
      );
      expect(job.opts.attempts).toBe(spec.options.attempts);
      expect(job.attemptsMade).toBe(1);
      expect(job.failedReason).toContain('Unknown validation region "XX"');
    } finally {
      await setRegion('ES');
    }
    // Once the configuration is mended, the account is created: the failed job holds no slot.
    const created = await api.create('HOPE-1');
    expect(created.statusCode).toBe(201);
  });

  it('fails a migration e-mail at once when the SMTP server refuses it for good, without the address', async () => {
    await t.app.db.models.ImportSupplier.updateOne(
      { code: SUPPLIER },
      { $set: { sendMigrationEmail: true } },
    );
    expect((await api.stage(accountPayload('HOPE-2'))).statusCode).toBe(201);
    const created = await api.create('HOPE-2');
    expect(created.statusCode).toBe(201);
    const account = await t.app.db.models.Account.findOne({
      number: created.json().kraken_account_number,
    }).lean();
    const id = jobId('email', account!._id.toHexString());
    const job = await failedJob('migration-email', (j) => j.id === id, 'the e-mail job to fail');
    expect(job.opts.attempts).toBe(jobCatalog['send-migration-email'].options.attempts);
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toBe('SMTP failure EENVELOPE 550 (permanent)');
    expect(smtp.received).toHaveLength(0);
    // Not marked sent, so an operator can retry the job once the cause is fixed.
    expect((await t.app.db.models.Account.findById(account!._id).lean())?.migrationEmailStatus).toBe(
      'pending',
    );
  });

  it('fails a payment verification for a vendor this worker has not enabled', async () => {
    expect((await api.stage(accountPayload('HOPE-3'))).statusCode).toBe(201);
    expect((await api.create('HOPE-3')).statusCode).toBe(201);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/data-import/payment-instruction/create/',
      headers,
      payload: {
        import_supplier: SUPPLIER,
        external_account_number: 'HOPE-3',
        vendor: 'SIMULATED',
        reference: 'sim_ok_1',
        type: 'CARD',
      },
    });
    expect(res.statusCode).toBe(500);
    expect(res.json().code).toBe('internal_error');
    const job = await failedJob(
      'payment-verification',
      (j) => j.data.reference === 'sim_ok_1',
      'the verification to fail',
    );
    expect(job.failedReason).toBe('payment vendor SIMULATED is not enabled on this worker (PAYMENT_VENDORS)');
    expect(await t.app.db.models.PaymentInstruction.countDocuments()).toBe(0);
  });

  it('fails a job with data or a name the workers cannot run', async () => {
    const spec = jobCatalog['create-account'];
    await queue('account-creation').add(
      'create-account',
      { processId: 42 },
      { ...spec.options, ...retention, jobId: 'bad-data' },
    );
    await queue('account-creation').add(
      'frobnicate',
      {},
      { ...spec.options, ...retention, jobId: 'bad-name' },
    );
    const bad = await failedJob('account-creation', (j) => j.id === 'bad-data', 'the bad job to fail');
    expect(bad.attemptsMade).toBe(1);
    expect(bad.failedReason).toBe(
      'invalid data for create-account: processId, operationsTeamId, dryRun, requestId',
    );
    const unknown = await failedJob(
      'account-creation',
      (j) => j.id === 'bad-name',
      'the unknown job to fail',
    );
    expect(unknown.attemptsMade).toBe(1);
    expect(unknown.failedReason).toBe('unknown job frobnicate on account-creation');
  });
});
