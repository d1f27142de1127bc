import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realisticAccountPayload } from '../domain/fixtures-realistic.js';
import {
  apiFor,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  type Api,
  type TestWorkers,
} from '../creation/support.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';
import {
  addDays,
  AS_OF,
  decimalCents,
  ExpectedLedger,
  ledgersOfPayload,
  money,
  reconciliationFor,
  type RawTransaction,
} from './support.js';

// Accounts created through the API (stage, create on a worker) from realistic payloads, then every kind of
// post-import data, each request sent twice; what reconciliation reads back is compared, figure by figure, with
// what the test worked out itself from what it sent (the digest with createHash and BigInt, see support.ts).

let t: TestApp;
let workers: TestWorkers;
let api: Api;
let headers: Record<string, string>;
let other: { headers: Record<string, string> };

type Payload = ReturnType<typeof realisticAccountPayload>;
type Expected = {
  external: string;
  number: string;
  ledgers: ExpectedLedger[];
  taken: Set<string>;
  statements: number;
  notes: number;
  paymentInstruction: { vendor: string; status: string } | null;
};
const accounts = new Map<string, Expected>();

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'reconciliation' } });
  headers = (await setupTenant(t)).headers;
  other = await createTenant(t, 'Otra Energía', 'OTRA_ENERGIA');
  api = apiFor(t, headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const recon = () => reconciliationFor(t, headers);

/** Stages and creates a realistic account, and what the test expects of it right after. */
async function createAccount(external: string, options: { months?: number; ledgers?: number } = {}) {
  const payload: Payload = realisticAccountPayload({
    ...options,
    importSupplier: SUPPLIER,
    externalAccountNumber: external,
  });
  expect((await api.stage(payload)).statusCode).toBe(201);
  const created = await api.create(external);
  expect(created.statusCode, created.body).toBe(201);
  const taken = new Set<string>();
  const expected: Expected = {
    external,
    number: created.json().kraken_account_number as string,
    ledgers: ledgersOfPayload(payload as unknown as Parameters<typeof ledgersOfPayload>[0], taken),
    taken,
    statements: payload.statements.length,
    notes: payload.notes.length,
    paymentInstruction: null,
  };
  accounts.set(external, expected);
  return { payload, expected };
}

function expectedBody(e: Expected) {
  return {
    import_supplier_code: SUPPLIER,
    external_account_number: e.external,
    kraken_account_number: e.number,
    as_of: expect.stringMatching(AS_OF),
    ledgers: e.ledgers.map((l) => l.body()),
    statements: e.statements,
    notes: e.notes,
    payment_instruction: e.paymentInstruction,
  };
}

/** Sends a post-import request twice: the second must change nothing the account holds. */
async function twice(external: string, path: string, body: Record<string, unknown>) {
  const first = await api.postImport(external, path, body);
  const again = await api.postImport(external, path, body);
  return { first, again };
}

const ledger = (e: Expected, code: string) => e.ledgers.find((l) => l.code === code)!;

describe('reading back a created account', () => {
  it('answers every figure of a realistic account right after its creation', async () => {
    const { expected } = await createAccount('REC-NEW-1');
    const res = await recon().get(SUPPLIER, 'REC-NEW-1');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(expectedBody(expected));
    // About 200 transactions over two ledgers, every origin of the payload.
    expect(expected.ledgers.reduce((n, l) => n + l.transactions.size, 0)).toBeGreaterThan(150);
  });

  it('follows every kind of post-import data, each request sent twice, figure by figure', async () => {
    const { payload, expected: e } = await createAccount('REC-FULL-1');
    const electricity = payload.ledgers[0]!;
    const closing = electricity.last_statement_closing_date;
    const inPeriod = addDays(closing, 12);
    const beforePeriod = addDays(closing, -20);

    // Transactions onto the first ledger: one in the open period, one re-dated (with its pinned note), and one
    // the payload already holds (not stored again); then one onto GAS.
    const onElectricity: RawTransaction[] = [
      {
        transaction_id: 'REC-T-1',
        transaction_date: inPeriod,
        amount: '25.10',
        type: 'PAYMENT',
        payment_type: 'BANK_TRANSFER',
      },
      {
        transaction_id: 'REC-T-2',
        transaction_date: beforePeriod,
        amount: 3.5,
        type: 'CHARGE',
        reason: 'LATE_PAYMENT_FEE',
      },
      { ...(electricity.current_statement_transactions[0] as RawTransaction), amount: '1.00' },
    ];
    const sent = await twice('REC-FULL-1', 'transactions/create/', { transactions: onElectricity });
    expect(sent.first.statusCode, sent.first.body).toBe(201);
    expect(sent.again.json().results.map((r: { status: string }) => r.status)).toEqual([
      'TRANSACTION_ALREADY_EXISTS',
      'TRANSACTION_ALREADY_EXISTS',
      'TRANSACTION_ALREADY_EXISTS',
    ]);
    ledger(e, 'ELECTRICITY').add(onElectricity, 'imported', e.taken);
    e.notes += 1; // the re-dating note, once
    const onGas: RawTransaction[] = [
      {
        transaction_id: 'REC-G-1',
        transaction_date: inPeriod,
        amount: '0.07',
        type: 'REPAYMENT',
        payment_type: 'DIRECT_CREDIT',
      },
    ];
    expect(
      (await twice('REC-FULL-1', 'transactions/create/', { ledger_code: 'GAS', transactions: onGas })).first
        .statusCode,
    ).toBe(201);
    ledger(e, 'GAS').add(onGas, 'imported', e.taken);

    // Historical billing documents on GAS: two documents, three transactions and one additional.
    const documentTransactions: RawTransaction[][] = [
      [
        {
          transaction_id: 'REC-BD-1A',
          transaction_date: '2021-02-03',
          amount: '40.00',
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
        {
          transaction_id: 'REC-BD-1B',
          transaction_date: '2021-02-03',
          amount: '2.15',
          type: 'CREDIT',
          reason: 'GENERAL_CREDIT',
        },
      ],
      [
        {
          transaction_id: 'REC-BD-2A',
          transaction_date: '2021-03-03',
          amount: '38.40',
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    ];
    const additional = [
      {
        transaction_id: 'REC-BD-X',
        transaction_date: '2021-03-09',
        amount: '38.40',
        type: 'PAYMENT',
        payment_type: 'DD_REGULAR_COLLECTION',
      },
    ];
    const billing = await twice('REC-FULL-1', 'historical-billing-documents/create/', {
      ledger_code: 'GAS',
      billing_document_type: 'ITEM_BASED',
      historical_billing_documents: documentTransactions.map((transactions, i) => ({
        billing_document_identifier: `REC-BD-${i + 1}`,
        billing_document_type: 'ITEM_BASED',
        issued_date: transactions[0]!.transaction_date,
        transactions,
      })),
      additional_historical_transactions: additional,
    });
    expect(billing.first.statusCode, billing.first.body).toBe(201);
    expect(billing.again.json().code).toBe('ledger_has_finalized_billing_document');
    ledger(e, 'GAS').add(documentTransactions.flat(), 'billing_document', e.taken);
    ledger(e, 'GAS').add(additional, 'additional_historical', e.taken);
    ledger(e, 'GAS').billingDocuments += 2;

    // Two historical statements (periods before the closing date: the open period stays).
    const statements = ['2020-01', '2020-02'].map((month) => ({
      bill_period_from_date: `${month}-01`,
      bill_period_to_date: `${month}-28`,
      statement_id: `REC-ST-${month}`,
      issued_date: `${month}-28`,
      number: `F-${month}`,
      gross_amount: 4210,
    }));
    const stated = await twice('REC-FULL-1', 'historical-statements/create/', { statements });
    expect(stated.first.statusCode, stated.first.body).toBe(201);
    expect(stated.again.json().code).toBe('historical_statement_already_exists');
    e.statements += 2;

    // Notes: the payload's again (the same note), a dated one, an undated one and one made of a document.
    const notes = [
      { body: payload.notes[0]!.body, created_at: payload.notes[0]!.created_at },
      { body: 'Llamada de bienvenida hecha.', created_at: '2025-06-01T09:15:00Z' },
      { body: 'Prefiere factura electrónica.' },
      { document_paths: [{ document_path: 'letters/welcome.pdf' }] },
    ];
    const noted = await twice('REC-FULL-1', 'notes/create/', { notes });
    expect(noted.first.json().map((n: { status: string }) => n.status)).toEqual([
      'NOTE_ALREADY_EXISTS',
      'NOTE_CREATION_SUCCESS',
      'NOTE_CREATION_SUCCESS',
      'NOTE_CREATION_SUCCESS',
    ]);
    expect(noted.again.json().every((n: { status: string }) => n.status === 'NOTE_ALREADY_EXISTS')).toBe(
      true,
    );
    e.notes += 3;

    // A payment instruction, verified on the worker by the simulated vendor.
    const instruction = await twice('REC-FULL-1', 'payment-instruction/create/', {
      vendor: 'SIMULATED',
      reference: 'sim_ok_recon_card',
      type: 'CARD',
    });
    expect([instruction.first.statusCode, instruction.again.statusCode]).toEqual([201, 201]);
    e.paymentInstruction = { vendor: 'SIMULATED', status: 'ACTIVE' };

    const res = await recon().get(SUPPLIER, 'REC-FULL-1');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual(expectedBody(e));
    // Spelled out, so that a mistake in the expectations above cannot hide one in the service.
    expect(body.ledgers.map((l: { ledger_code: string }) => l.ledger_code)).toEqual(['ELECTRICITY', 'GAS']);
    expect(body.ledgers[0].transactions.by_origin.imported).toBe(2);
    expect(body.ledgers[1].transactions.by_origin).toMatchObject({
      imported: 1,
      billing_document: 3,
      additional_historical: 1,
    });
    expect(body.ledgers[1].billing_documents).toBe(2);
    expect(body.ledgers[0].balance).toBe(money(decimalCents(electricity.ledger_balance) + 2510n - 350n));
    expect([body.statements, body.notes]).toEqual([3, 5]);
  });
});

describe('an account that cannot be read back', () => {
  it('needs a token, like the rest of v2', async () => {
    const res = await reconciliationFor(t, {}).get(SUPPLIER, 'REC-NEW-1');
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('not_authenticated');
    expect((await reconciliationFor(t, {}).batch({})).statusCode).toBe(401);
  });

  it('is 404 account_not_found while only staged, and not_found without an import process', async () => {
    const payload = realisticAccountPayload({
      importSupplier: SUPPLIER,
      externalAccountNumber: 'REC-STAGED',
    });
    expect((await api.stage(payload)).statusCode).toBe(201);
    const staged = await recon().get(SUPPLIER, 'REC-STAGED');
    expect(staged.statusCode).toBe(404);
    expect(staged.json()).toEqual({
      detail: 'Account not found. It must be imported, not only staged.',
      code: 'account_not_found',
    });
    const unknown = await recon().get(SUPPLIER, 'REC-NEVER');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ detail: 'Not found.', code: 'not_found' });
  });

  it('is 404 not_found for another organisation, whose supplier and accounts are as unknown ones', async () => {
    await createAccount('REC-TENANT-1');
    const theirs = reconciliationFor(t, other.headers);
    expect((await theirs.get(SUPPLIER, 'REC-TENANT-1')).json()).toEqual({
      detail: 'Not found.',
      code: 'not_found',
    });
    expect((await recon().get('OTRA_ENERGIA', 'REC-TENANT-1')).statusCode).toBe(404);
    const batch = await theirs.batch({
      import_supplier_code: SUPPLIER,
      external_account_numbers: ['REC-TENANT-1'],
    });
    expect(batch.statusCode).toBe(404);
    expect(batch.json()).toEqual({ detail: 'Import supplier not found.', code: 'import_supplier_not_found' });
    expect(
      (await recon().batch({ import_supplier_code: 'NOPE', external_account_numbers: ['X'] })).json().code,
    ).toBe('import_supplier_not_found');
  });
});

describe('POST /v2/data-import/accounts/reconciliation/', () => {
  it('answers every account in the order asked, created ones with their body and the others with their error', async () => {
    await createAccount('REC-BATCH-1', { months: 12, ledgers: 1 });
    await createAccount('REC-BATCH-2', { months: 24, ledgers: 3 });
    const order = ['REC-BATCH-2', 'REC-NEVER', 'REC-STAGED', 'REC-BATCH-1', 'REC-FULL-1', 'REC-BATCH-2'];
    const res = await recon().batch({ import_supplier_code: SUPPLIER, external_account_numbers: order });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      results: [
        expectedBody(accounts.get('REC-BATCH-2')!),
        { external_account_number: 'REC-NEVER', error: { code: 'not_found' } },
        { external_account_number: 'REC-STAGED', error: { code: 'account_not_found' } },
        expectedBody(accounts.get('REC-BATCH-1')!),
        expectedBody(accounts.get('REC-FULL-1')!),
        expectedBody(accounts.get('REC-BATCH-2')!),
      ],
    });
    // The batch answers what the single read answers.
    const single = (await recon().get(SUPPLIER, 'REC-FULL-1')).json();
    expect({ ...res.json().results[4], as_of: '' }).toEqual({ ...single, as_of: '' });
  });

  it('reads 500 numbers, and refuses 501 with too_many_items', async () => {
    const numbers = Array.from({ length: 500 }, (_, i) => (i % 100 === 0 ? 'REC-BATCH-1' : `REC-NONE-${i}`));
    const full = await recon().batch({ import_supplier_code: SUPPLIER, external_account_numbers: numbers });
    expect(full.statusCode).toBe(200);
    const results = full.json().results as Array<{
      external_account_number: string;
      error?: { code: string };
    }>;
    expect(results.map((r) => r.external_account_number)).toEqual(numbers);
    expect(results.filter((r) => !r.error)).toHaveLength(5);

    const tooMany = await recon().batch({
      import_supplier_code: SUPPLIER,
      external_account_numbers: [...numbers, 'REC-BATCH-2'],
    });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json()).toEqual({
      detail: 'The request names more items than one request may carry; split it.',
      code: 'too_many_items',
      errors: [
        {
          detail: 'Ensure this list has no more than 500 items.',
          code: 'too_many_items',
          attr: 'external_account_numbers',
        },
      ],
    });
  });

  it('refuses a body without numbers, or with unexpected fields, with request_failed_validation', async () => {
    const empty = await recon().batch({
      import_supplier_code: SUPPLIER,
      external_account_numbers: [],
      extra: 1,
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toEqual({
      detail: 'The request failed validation.',
      code: 'request_failed_validation',
      errors: [
        {
          detail: 'Ensure this list has at least 1 item(s).',
          code: 'min_items',
          attr: 'external_account_numbers',
        },
        { detail: 'Unexpected field.', code: 'unexpected_field', attr: 'extra' },
      ],
    });
  });
});
