import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Types } from 'mongoose';
import {
  defaultLedger,
  ledgerView,
  seedAccount,
  seedStagedOnly,
  setSupplierStatus,
  startPostImportEnv,
  type PostImportEnv,
} from './fixtures.js';

let env: PostImportEnv;
beforeAll(async () => {
  env = await startPostImportEnv('billdocs');
  await seedStagedOnly(env, 'EXT-STAGED');
});
afterAll(async () => env.close());

let seq = 0;
async function freshAccount() {
  const external = `EXT-BD-${++seq}`;
  const { account } = await seedAccount(env, external, [
    defaultLedger(),
    defaultLedger({ code: 'GAS', lastStatementBalanceMinor: 0 }),
  ]);
  return { external, accountId: account._id };
}

const periodDoc = (id: string, txnId: string) => ({
  billing_document_identifier: id,
  billing_document_type: 'PERIOD_BASED',
  issued_date: '2024-12-05',
  bill_period_from_date: '2024-11-01',
  bill_period_to_date: '2024-11-30',
  transactions: [
    {
      transaction_id: txnId,
      transaction_date: '2024-12-05',
      amount: 48.2,
      type: 'CHARGE',
      reason: 'IMPORTED_CHARGE',
    },
  ],
});

const request = (
  external: string,
  ledgerCode: string,
  suffix: string,
  overrides: Record<string, unknown> = {},
) => ({
  import_supplier: env.supplier,
  external_account_number: external,
  ledger_code: ledgerCode,
  ledger_number: 'L-0001',
  billing_document_type: 'PERIOD_BASED',
  historical_billing_documents: [
    periodDoc(`FAC-${suffix}-1`, `HBD-${suffix}-1`),
    periodDoc(`FAC-${suffix}-2`, `HBD-${suffix}-2`),
  ],
  additional_historical_transactions: [
    {
      transaction_id: `HBD-${suffix}-X`,
      transaction_date: '2024-12-20',
      amount: '48.20',
      type: 'PAYMENT',
      payment_type: 'DD_REGULAR_COLLECTION',
    },
  ],
  ...overrides,
});

/** The billing documents stored on the account (every ledger). */
async function documents(accountId: Types.ObjectId) {
  const [electricity, gas] = await Promise.all([
    ledgerView(env, accountId, 'ELECTRICITY'),
    ledgerView(env, accountId, 'GAS'),
  ]);
  return [...electricity.billingDocuments, ...gas.billingDocuments];
}

describe('POST /v1/data-import/historical-billing-documents/create/', () => {
  it('creates documents and their transactions with an empty 201, once per ledger; another ledger is accepted', async () => {
    const { external, accountId } = await freshAccount();
    const res = await env.post('historical-billing-documents/create/', request(external, 'ELECTRICITY', 'E'));
    expect(res.statusCode).toBe(201);
    expect(res.body).toBe('');

    const ledger = await ledgerView(env, accountId, 'ELECTRICITY');
    expect(ledger.billingDocuments.map((d) => [d.identifier, d.documentType, d.billPeriodFromDate])).toEqual([
      ['FAC-E-1', 'PERIOD_BASED', '2024-11-01'],
      ['FAC-E-2', 'PERIOD_BASED', '2024-11-01'],
    ]);
    expect(ledger.transactions.map((t) => [t.transactionId, t.origin, t.billingDocument])).toEqual([
      ['HBD-E-1', 'billing_document', 'FAC-E-1'],
      ['HBD-E-2', 'billing_document', 'FAC-E-2'],
      ['HBD-E-X', 'additional_historical', null],
    ]);
    // Historical transactions are already inside the last statement balance.
    expect(ledger.billingImportKey).not.toBeNull();
    expect(ledger.balanceMinor).toBe(-1500);

    const second = await env.post(
      'historical-billing-documents/create/',
      request(external, 'ELECTRICITY', 'E2'),
    );
    expect(second.statusCode).toBe(400);
    expect(second.json()).toEqual({
      detail: 'The ledger already has a finalized billing document.',
      code: 'ledger_has_finalized_billing_document',
      errors: [],
    });
    // The same import sent again: the same refusal, naming it as the import already on the ledger.
    const repeat = await env.post(
      'historical-billing-documents/create/',
      request(external, 'ELECTRICITY', 'E'),
    );
    expect(repeat.statusCode).toBe(400);
    expect(repeat.json()).toEqual({
      detail: 'The ledger already has a finalized billing document.',
      code: 'ledger_has_finalized_billing_document',
      errors: [
        {
          detail: 'This same import is already on the ledger.',
          code: 'billing_documents_already_imported',
          attr: 'ledger_code',
        },
      ],
    });
    expect(await documents(accountId)).toHaveLength(2);

    const gas = await env.post('historical-billing-documents/create/', request(external, 'GAS', 'G'));
    expect(gas.statusCode).toBe(201);
    expect(await documents(accountId)).toHaveLength(4);
  });

  it('lets only one of 10 concurrent imports for a ledger through', async () => {
    const { external, accountId } = await freshAccount();
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        env.post('historical-billing-documents/create/', request(external, 'ELECTRICITY', `C${i}`)),
      ),
    );
    expect(responses.filter((r) => r.statusCode === 201)).toHaveLength(1);
    // Each refused one is a different import from the one written: none is named as already there.
    expect(
      responses.filter((r) => r.statusCode === 400).map((r) => [r.json().code, r.json().errors]),
    ).toEqual(Array(9).fill(['ledger_has_finalized_billing_document', []]));
    expect(await documents(accountId)).toHaveLength(2);
    expect((await ledgerView(env, accountId)).transactions).toHaveLength(3);
  });

  it('names billing_documents_already_imported only for the very import on the ledger, also among 10 concurrent copies', async () => {
    const { external, accountId } = await freshAccount();
    const body = request(external, 'ELECTRICITY', 'S');
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => env.post('historical-billing-documents/create/', body)),
    );
    expect(responses.filter((r) => r.statusCode === 201)).toHaveLength(1);
    expect(
      responses.filter((r) => r.statusCode === 400).map((r) => [r.json().code, r.json().errors[0]?.code]),
    ).toEqual(Array(9).fill(['ledger_has_finalized_billing_document', 'billing_documents_already_imported']));
    expect(await documents(accountId)).toHaveLength(2);

    // Part of that import (one document fewer) is another import: refused as any second import is.
    const part = await env.post('historical-billing-documents/create/', {
      ...body,
      historical_billing_documents: body.historical_billing_documents.slice(0, 1),
    });
    expect(part.statusCode).toBe(400);
    expect(part.json()).toEqual({
      detail: 'The ledger already has a finalized billing document.',
      code: 'ledger_has_finalized_billing_document',
      errors: [],
    });
  });

  it('needs both period dates on PERIOD_BASED documents and none on ITEM_BASED ones', async () => {
    const { external, accountId } = await freshAccount();
    const { bill_period_to_date: _omit, ...noEnd } = periodDoc('P-1', 'P-T1');
    const period = await env.post(
      'historical-billing-documents/create/',
      request(external, 'ELECTRICITY', 'P', { historical_billing_documents: [noEnd] }),
    );
    expect(period.statusCode).toBe(400);
    expect(period.json().errors).toContainEqual(
      expect.objectContaining({ attr: 'historical_billing_documents.0.bill_period_to_date' }),
    );

    const item = await env.post(
      'historical-billing-documents/create/',
      request(external, 'ELECTRICITY', 'I', {
        billing_document_type: 'ITEM_BASED',
        historical_billing_documents: [{ ...periodDoc('I-1', 'I-T1'), billing_document_type: 'ITEM_BASED' }],
      }),
    );
    expect(item.statusCode).toBe(400);
    expect(item.json().errors).toContainEqual(
      expect.objectContaining({ attr: 'historical_billing_documents.0.bill_period_from_date' }),
    );

    const {
      bill_period_from_date: _f,
      bill_period_to_date: _t,
      ...itemDoc
    } = { ...periodDoc('I-2', 'I-T2'), billing_document_type: 'ITEM_BASED' };
    const ok = await env.post(
      'historical-billing-documents/create/',
      request(external, 'ELECTRICITY', 'I2', {
        billing_document_type: 'ITEM_BASED',
        historical_billing_documents: [itemDoc],
      }),
    );
    expect(ok.statusCode).toBe(201);
    expect((await documents(accountId))[0]).toMatchObject({
      documentType: 'ITEM_BASED',
      billPeriodFromDate: null,
    });
  });

  it('refuses transaction ids already on the account and an unknown ledger, writing nothing', async () => {
    const { external, accountId } = await freshAccount();
    await env.post('transactions/create/', {
      import_supplier: env.supplier,
      external_account_number: external,
      transactions: [
        {
          transaction_id: 'HBD-D-1',
          transaction_date: '2025-06-10',
          amount: 1,
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    });
    const clash = await env.post(
      'historical-billing-documents/create/',
      request(external, 'ELECTRICITY', 'D'),
    );
    expect(clash.statusCode).toBe(400);
    expect(clash.json()).toMatchObject({
      code: 'request_failed_validation',
      errors: [
        {
          code: 'transaction_already_exists',
          attr: 'historical_billing_documents.0.transactions.0.transaction_id',
        },
      ],
    });
    const ledger = await ledgerView(env, accountId, 'ELECTRICITY');
    expect(ledger.billingImportKey).toBeNull();
    expect(ledger.transactions.map((t) => t.transactionId)).toEqual(['HBD-D-1']);

    const unknown = await env.post('historical-billing-documents/create/', request(external, 'WATER', 'W'));
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().code).toBe('ledger_not_found');
    expect(await documents(accountId)).toHaveLength(0);
  });

  it('answers 404 for unknown or staged-only accounts and 400 when the supplier is Complete', async () => {
    for (const ext of ['EXT-NOPE', 'EXT-STAGED']) {
      const res = await env.post('historical-billing-documents/create/', request(ext, 'ELECTRICITY', 'N'));
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('account_not_found');
    }
    const { external } = await freshAccount();
    await setSupplierStatus(env, 'Complete');
    try {
      const res = await env.post(
        'historical-billing-documents/create/',
        request(external, 'ELECTRICITY', 'N'),
      );
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('import_supplier_migration_not_ongoing');
    } finally {
      await setSupplierStatus(env, 'Ongoing');
    }
  });
});
