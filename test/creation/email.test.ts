import { afterAll, beforeAll, expect, it } from 'vitest';
import { jobCatalog, retention } from '../../src/jobs/catalog.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  SUPPLIER,
  setupTenant,
  startSmtpServer,
  startTestWorkers,
  until,
  type Api,
  type TestWorkers,
} from './support.js';

let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let t: TestApp;
let api: Api;
let workers: TestWorkers;

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({
    env: { TEST_LABEL: 'email', SMTP_URL: smtp.url, MAIL_FROM: 'migraciones@acme.example' },
  });
  api = apiFor(t, (await setupTenant(t)).headers);
  await t.app.db.models.ImportSupplier.updateOne({ code: SUPPLIER }, { $set: { sendMigrationEmail: true } });
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
  await smtp?.close();
});

it('sends one migration e-mail to the account holder, never for a dry run, never twice', async () => {
  await api.stage(accountPayload('MAIL-1'));
  expect((await api.create('MAIL-1', { dry_run: true })).json().code).toBe('dry_run_rolled_back');
  const res = await api.create('MAIL-1');
  expect(res.statusCode).toBe(201);
  const number = res.json().kraken_account_number as string;
  await until(async () => smtp.received.length > 0, 'the e-mail to arrive');
  expect(smtp.received).toHaveLength(1);
  expect(smtp.received[0]!.to).toEqual(['maria.garcia@correo-cliente.es']);
  expect(smtp.received[0]!.from).toBe('migraciones@acme.example');
  expect(smtp.received[0]!.raw).toContain(number);
  const account = await until(async () => {
    const doc = await t.app.db.models.Account.findOne({ number }).lean();
    return doc?.migrationEmailStatus === 'sent' ? doc : null;
  }, 'the account to record the e-mail');

  // The same e-mail job again (a retried creation re-adds it): the account's claim stops a second send.
  const spec = jobCatalog['send-migration-email'];
  const again = await t.app.queues
    .queue(spec.queue)
    .add(
      'send-migration-email',
      { accountId: account._id.toHexString(), requestId: 'r' },
      { ...spec.options, ...retention, jobId: 'email-again' },
    );
  await until(async () => (await again.getState()) === 'completed', 'the repeated e-mail job to finish');
  expect((await t.app.queues.queue(spec.queue).getJob('email-again'))!.returnvalue).toEqual({
    ok: true,
    status: 'sent',
  });
  expect(smtp.received).toHaveLength(1);
});

it('marks the e-mail skipped when SMTP is not configured', async () => {
  const other = await startTestApp({ env: { TEST_LABEL: 'nosmtp' } });
  const otherWorkers = await startTestWorkers(other.config);
  try {
    const otherApi = apiFor(other, (await setupTenant(other)).headers);
    await other.app.db.models.ImportSupplier.updateOne(
      { code: SUPPLIER },
      { $set: { sendMigrationEmail: true } },
    );
    await otherApi.stage(accountPayload('MAIL-2'));
    const number = (await otherApi.create('MAIL-2')).json().kraken_account_number as string;
    await until(
      async () =>
        (await other.app.db.models.Account.findOne({ number }).lean())?.migrationEmailStatus === 'skipped',
      'skipped',
    );
    expect(smtp.received).toHaveLength(1);
  } finally {
    await otherWorkers.stop();
    await other.close();
  }
});

it('lets exactly one of several concurrent attempts for one account send the e-mail', async () => {
  await api.stage(accountPayload('MAIL-3'));
  const number = (await api.create('MAIL-3')).json().kraken_account_number as string;
  await until(async () => smtp.received.some((m) => m.raw.includes(number)), 'the first e-mail');
  // The first job is over once the account records the e-mail (after the SMTP server had it): only then is the
  // reset below not undone by that job's last write.
  const account = await until(async () => {
    const doc = await t.app.db.models.Account.findOne({ number }).lean();
    return doc?.migrationEmailStatus === 'sent' ? doc : null;
  }, 'the account to record the first e-mail');
  // Reset to "wanted" as if the creation had just finished, then race eight jobs for it.
  await t.app.db.models.EmailDelivery.deleteOne({ _id: String(account._id) });
  await t.app.db.models.Account.updateOne(
    { _id: account._id },
    { $set: { migrationEmailStatus: 'pending' } },
  );
  const before = smtp.received.length;
  const spec = jobCatalog['send-migration-email'];
  const jobs = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      t.app.queues
        .queue(spec.queue)
        .add(
          'send-migration-email',
          { accountId: String(account._id), requestId: 'race' },
          { ...retention, jobId: `race-${i}` },
        ),
    ),
  );
  await until(
    async () => (await Promise.all(jobs.map((j) => j.getState()))).every((s) => s === 'completed'),
    'the racing jobs',
  );
  expect(smtp.received.length - before).toBe(1);
});
