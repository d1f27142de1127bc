import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  env = await startPostImportEnv('statements');
  await seedStagedOnly(env, 'EXT-STAGED');
});
afterAll(async () => env.close());

let seq = 0;
async function freshAccount() {
  const external = `EXT-ST-${++seq}`;
  const { account } = await seedAccount(env, external, [
    defaultLedger(),
    defaultLedger({ code: 'GAS', closingDate: '2025-06-15' }),
  ]);
  return { external, accountId: account._id };
}

const statement = (id: string, from: string, to: string, path?: string) => ({
  bill_period_from_date: from,
  bill_period_to_date: to,
  statement_id: id,
  issued_date: '2025-07-03',
  number: `F-${id}`,
  gross_amount: 6421,
  ...(path && { statement_path: path }),
});
const request = (external: string, statements: unknown[]) => ({
  import_supplier: env.supplier,
  external_account_number: external,
  statements,
});

describe('POST /v1/data-import/historical-statements/create/', () => {
  it('answers 201 with the validated data and records document locations under bucket/root', async () => {
    const { external, accountId } = await freshAccount();
    const body = request(external, [
      { ...statement('ST-1', '2025-04-01', '2025-04-30', 'statements/2025/04.pdf'), statement_id: ' ST-1 ' },
      statement('ST-2', '2025-05-01', '2025-05-31'),
    ]);
    const res = await env.post('historical-statements/create/', body);
    expect(res.statusCode).toBe(201);
    // Validated data: strings trimmed.
    expect(res.json()).toEqual(
      request(external, [
        statement('ST-1', '2025-04-01', '2025-04-30', 'statements/2025/04.pdf'),
        statement('ST-2', '2025-05-01', '2025-05-31'),
      ]),
    );
    const stored = (await ledgerView(env, accountId)).statements;
    expect(stored.map((s) => [s.statementId, s.grossAmountMinor, s.documentLocation, s.origin])).toEqual([
      [
        'ST-1',
        6421,
        `${env.t.config.DOCUMENT_BUCKET}/migrations/${env.supplier.toLowerCase()}/statements/2025/04.pdf`,
        'historical_import',
      ],
      ['ST-2', 6421, null, 'historical_import'],
    ]);
  });

  it("uses the supplier's own bucket when configured", async () => {
    await env.t.app.db.models.ImportSupplier.updateOne(
      { code: env.supplier },
      { $set: { documentBucket: 'acme-bucket', documentRoot: 'root/acme/' } },
    );
    try {
      const { external, accountId } = await freshAccount();
      const res = await env.post(
        'historical-statements/create/',
        request(external, [statement('B-1', '2025-04-01', '2025-04-30', 'a/b.pdf')]),
      );
      expect(res.statusCode).toBe(201);
      expect((await ledgerView(env, accountId)).statements[0]?.documentLocation).toBe(
        'acme-bucket/root/acme/a/b.pdf',
      );
    } finally {
      await env.t.app.db.models.ImportSupplier.updateOne(
        { code: env.supplier },
        { $set: { documentBucket: null, documentRoot: `migrations/${env.supplier.toLowerCase()}` } },
      );
    }
  });

  it('refuses a statement_id already on the account, writing nothing of the request', async () => {
    const { external, accountId } = await freshAccount();
    await env.post(
      'historical-statements/create/',
      request(external, [statement('DUP', '2025-04-01', '2025-04-30')]),
    );
    const res = await env.post(
      'historical-statements/create/',
      request(external, [
        statement('NEW', '2025-03-01', '2025-03-31'),
        statement('DUP', '2025-04-01', '2025-04-30'),
      ]),
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      detail: 'A statement with this statement_id already exists.',
      code: 'historical_statement_already_exists',
      errors: [
        {
          detail: 'Statement DUP already exists on the account.',
          code: 'historical_statement_already_exists',
          attr: 'statements.1.statement_id',
        },
      ],
    });
    expect((await ledgerView(env, accountId)).statements.map((st) => st.statementId)).toEqual(['DUP']);
  });

  it('moves the open statement period: later transactions before the latest statement end are re-dated after it', async () => {
    const { external, accountId } = await freshAccount();
    await env.post(
      'historical-statements/create/',
      request(external, [statement('P-1', '2025-06-01', '2025-06-30')]),
    );
    const ledgers = [await ledgerView(env, accountId), await ledgerView(env, accountId, 'GAS')];
    expect(ledgers.map((l) => l.openPeriodStart)).toEqual(['2025-07-01', '2025-07-01']);
    // An older statement does not move it back.
    await env.post(
      'historical-statements/create/',
      request(external, [statement('P-0', '2025-01-01', '2025-01-31')]),
    );
    expect((await ledgerView(env, accountId, 'GAS')).openPeriodStart).toBe('2025-07-01');

    const res = await env.post('transactions/create/?force_add_to_current_statement=false', {
      import_supplier: env.supplier,
      external_account_number: external,
      transactions: [
        {
          transaction_id: 'JUNE',
          transaction_date: '2025-06-20',
          amount: 1,
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error_detail).toContain('starts on 2025-07-01');
  });

  it('answers 400 with every validation error', async () => {
    const { external } = await freshAccount();
    const res = await env.post(
      'historical-statements/create/',
      request(external, [
        { ...statement('V-1', '2025-05-01', '2025-04-01', '/abs/path.pdf'), gross_amount: 12.5 },
        statement('V-1', '2025-04-01', '2025-04-30', '../escape.pdf'),
      ]),
    );
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('request_failed_validation');
    expect(res.json().errors.map((e: { code: string; attr: string }) => `${e.attr}:${e.code}`)).toEqual(
      expect.arrayContaining([
        'statements.0.bill_period_from_date:start_date_later_than_end_date',
        'statements.0.statement_path:invalid_document_path',
        'statements.1.statement_path:invalid_document_path',
        'statements.1.statement_id:duplicate_statement_ids',
      ]),
    );
    expect(res.json().errors.some((e: { attr: string }) => e.attr === 'statements.0.gross_amount')).toBe(
      true,
    );
  });

  it('answers 404 for unknown or staged-only accounts and 400 when the supplier is Paused', async () => {
    for (const ext of ['EXT-NOPE', 'EXT-STAGED']) {
      const res = await env.post(
        'historical-statements/create/',
        request(ext, [statement('N', '2025-04-01', '2025-04-30')]),
      );
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('account_not_found');
    }
    const { external } = await freshAccount();
    await setSupplierStatus(env, 'Paused');
    try {
      const res = await env.post(
        'historical-statements/create/',
        request(external, [statement('N', '2025-04-01', '2025-04-30')]),
      );
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('import_supplier_migration_not_ongoing');
    } finally {
      await setSupplierStatus(env, 'Ongoing');
    }
  });
});
