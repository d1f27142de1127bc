import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startTestWorkers,
  type Api,
  type TestWorkers,
} from '../creation/support.js';
import { startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
let workers: TestWorkers;
let api: Api;
let headers: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'postimport_e2e' } });
  headers = (await setupTenant(t)).headers;
  api = apiFor(t, headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const post = (url: string, payload: Record<string, unknown>) => api.postImport('E2E-1', url, payload);

describe('post-import onto an account created by stage + create + worker', () => {
  it('is 404 while only staged, then imports every kind of data once the account exists', async () => {
    expect((await api.stage(accountPayload('E2E-1'))).statusCode).toBe(201);
    const staged = await post('notes/create/', { notes: [{ body: 'Too early.' }] });
    expect(staged.statusCode).toBe(404);
    expect(staged.json().code).toBe('account_not_found');

    const created = await api.create('E2E-1', { dry_run: false });
    expect(created.statusCode).toBe(201);
    const number = created.json().kraken_account_number as string;
    const { Account, Note } = t.app.db.models;
    const account = await Account.findOne({ number }).orFail().lean();
    const journal = t.app.storage.journal;
    const ledger = async () =>
      (await journal.history(account._id))!.head.ledgers.find((l) => l.code === 'ELECTRICITY')!;
    // The ELECTRICITY ledger of the payload: closed on 2025-03-31, balance 5.50.
    expect(await ledger()).toMatchObject({ balanceMinor: 550, openPeriodStart: '2025-04-01', position: 0 });

    // A note of the account payload is recognised as the same note.
    const notes = await post('notes/create/', {
      notes: [
        { body: 'Cliente migrado desde el sistema anterior.', created_at: '2025-05-02T08:30:00Z' },
        { body: 'New after migration.' },
      ],
    });
    expect(notes.statusCode).toBe(201);
    expect(notes.json().map((n: { status: string }) => n.status)).toEqual([
      'NOTE_ALREADY_EXISTS',
      'NOTE_CREATION_SUCCESS',
    ]);

    const txns = await post('transactions/create/', {
      transactions: [
        {
          transaction_id: 'ELEC-C-001',
          transaction_date: '2025-04-05',
          amount: 12,
          type: 'PAYMENT',
          payment_type: 'DD_REGULAR_COLLECTION',
        },
        {
          transaction_id: 'E2E-T1',
          transaction_date: '2025-04-20',
          amount: '10.00',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
        },
        {
          transaction_id: 'E2E-T2',
          transaction_date: '2025-03-01',
          amount: '0.25',
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    });
    expect(txns.statusCode).toBe(201);
    expect(txns.json().results.map((r: { status: string }) => r.status)).toEqual([
      'TRANSACTION_ALREADY_EXISTS',
      'TRANSACTION_ADDED_TO_ACCOUNT',
      'TRANSACTION_ADDED_TO_ACCOUNT',
    ]);
    expect(txns.json().results[2].transaction_data.transaction_date).toBe('2025-04-01');
    // 5.50 + 10.00 - 0.25, recomputed from the records the creation worker wrote plus the imported ones.
    expect((await ledger()).balanceMinor).toBe(1525);
    expect(await Note.countDocuments({ accountId: account._id, origin: 'system', isPinned: true })).toBe(1);

    const statements = await post('historical-statements/create/', {
      statements: [
        {
          bill_period_from_date: '2025-04-01',
          bill_period_to_date: '2025-04-30',
          statement_id: 'E2E-ST-1',
          issued_date: '2025-05-03',
          number: 'F-1',
          gross_amount: 1000,
        },
      ],
    });
    expect(statements.statusCode).toBe(201);
    expect((await ledger()).openPeriodStart).toBe('2025-05-01');

    const docs = await post('historical-billing-documents/create/', {
      ledger_code: 'ELECTRICITY',
      billing_document_type: 'ITEM_BASED',
      historical_billing_documents: [
        {
          billing_document_identifier: 'E2E-BD-1',
          billing_document_type: 'ITEM_BASED',
          issued_date: '2025-02-01',
          transactions: [
            {
              transaction_id: 'E2E-BD-T1',
              transaction_date: '2025-02-01',
              amount: 5,
              type: 'CHARGE',
              reason: 'IMPORTED_CHARGE',
            },
          ],
        },
      ],
    });
    expect(docs.statusCode).toBe(201);
    expect((await ledger()).balanceMinor).toBe(1525);

    const instruction = await post('payment-instruction/create/', {
      vendor: 'SIMULATED',
      reference: 'sim_ok_e2e',
      type: 'DIRECT_DEBIT',
    });
    expect(instruction.statusCode).toBe(201);
    expect(instruction.json()).toEqual({
      kraken_account_number: number,
      reference: 'sim_ok_e2e',
      status: 'PAYMENT_INSTRUCTION_CREATED',
    });
    const stored = (await journal.history(account._id))!.transactions.map((tx) => tx.transactionId);
    expect(stored.filter((id) => ['E2E-T1', 'E2E-T2', 'E2E-BD-T1'].includes(id))).toHaveLength(3);
  });
});
