import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { AccountLocks } from '../../src/use-cases/post-import/account-lock.js';
import { importTransactions } from '../../src/use-cases/post-import/transactions.js';
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
import { startReceiver, type Receiver } from './receiver.js';

// Post-import requests over HTTP publish `post_import.completed-v1` to the organisation's endpoints: one event
// per request (the same request sent again is the same event), and a request whose first attempt wrote its
// data but died before recording the event records it when sent again.
let t: TestApp;
let workers: TestWorkers;
let receiver: Receiver;
const EXTERNAL = 'PIE-1';
const COMPLETED = 'data_import.import_process.post_import.completed-v1';

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'postimport_events', WEBHOOK_ALLOW_PRIVATE: 'true' } });
  api = apiFor(t, (await setupTenant(t)).headers);
  workers = await startTestWorkers(t.config);
  receiver = await startReceiver();
  await new WebhookOperations(t.app.storage, t.config).add('Acme Energía', receiver.url, [COMPLETED]);
  expect((await api.stage(accountPayload(EXTERNAL))).statusCode).toBe(201);
  expect((await api.create(EXTERNAL, { dry_run: false })).statusCode).toBe(201);
});
afterAll(async () => {
  await workers?.stop();
  await receiver?.close();
  await t?.close();
});

let api: Api;
const post = (url: string, payload: Record<string, unknown>) => api.postImport(EXTERNAL, url, payload);

/** The post-import events recorded for the account, by resource. */
const recorded = async (resource: string) =>
  (await t.app.db.models.ImportEvent.find({ type: COMPLETED, externalAccountNumber: EXTERNAL }).lean())
    .map((e) => ({ eventId: e.eventId, data: JSON.parse(e.data) as { resource: string; count: number } }))
    .filter((e) => e.data.resource === resource);

/** The bodies the receiver got for a resource. */
const delivered = (resource: string) =>
  receiver.received
    .map((r) => JSON.parse(r.body) as { id: string; data: { resource: string; count: number } })
    .filter((b) => b.data.resource === resource);

describe('post-import events', () => {
  it('one event per request, delivered; the same request sent again is the same event', async () => {
    const notes = { notes: [{ body: 'Migrated.' }, { body: 'Prefers e-mail.' }] };
    const first = await post('notes/create/', notes);
    expect(first.statusCode).toBe(201);
    // Recorded before the answer.
    const events = await recorded('notes');
    expect(events.map((e) => e.data.count)).toEqual([2]);
    await until(async () => delivered('notes').length === 1, 'the notes event at the receiver');
    expect(delivered('notes')[0]).toMatchObject({ id: events[0]!.eventId, data: { count: 2 } });

    const again = await post('notes/create/', notes);
    expect(again.json().map((n: { status: string }) => n.status)).toEqual([
      'NOTE_ALREADY_EXISTS',
      'NOTE_ALREADY_EXISTS',
    ]);
    expect(await recorded('notes')).toEqual(events);
  });

  it('a write whose event was never recorded (its process died) gets it when the client sends it again', async () => {
    const batch = {
      transactions: [
        {
          transaction_id: 'PIE-T1',
          transaction_date: '2025-04-20',
          amount: '10.00',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
        },
        {
          transaction_id: 'PIE-T2',
          transaction_date: '2025-04-21',
          amount: '1.25',
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    };
    // The first attempt: the write the route does, then nothing (the process died before the event).
    const process = await t.app.db.models.AccountImportProcess.findById(
      processKey(SUPPLIER, EXTERNAL),
    ).lean();
    const account = await t.app.db.models.Account.findOne({ number: process!.krakenAccountNumber }).lean();
    const written = await importTransactions(
      t.app.storage,
      new AccountLocks(t.app.redis, t.config.QUEUE_PREFIX),
      {
        accountId: account!._id,
        ledgerCode: 'ELECTRICITY',
        transactions: batch.transactions as never,
        raws: batch.transactions,
        checkPreviouslyAdded: true,
        forceAddToCurrentStatement: true,
        dryRun: false,
      },
      new Date(),
    );
    expect(written.ok).toBe(true);
    expect(await recorded('transactions')).toEqual([]);

    // The client got no answer and sends the request again: nothing is written twice, the event is recorded.
    const retry = await post('transactions/create/', { ledger_code: 'ELECTRICITY', ...batch });
    expect(retry.statusCode).toBe(201);
    expect(retry.json().results.map((r: { status: string }) => r.status)).toEqual([
      'TRANSACTION_ALREADY_EXISTS',
      'TRANSACTION_ALREADY_EXISTS',
    ]);
    const events = await recorded('transactions');
    expect(events.map((e) => e.data.count)).toEqual([2]);
    await until(async () => delivered('transactions').length === 1, 'the transactions event at the receiver');
    expect(delivered('transactions')[0]!.id).toBe(events[0]!.eventId);
  });
});
