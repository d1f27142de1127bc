import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  validAccountPayload,
  validBillingDocumentsImport,
  validNotesImport,
  validStatementsImport,
  validTransactionsImport,
} from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, readResults, runClient, startService, type ResultLine } from './support.js';

// `post-import` files sent a second time, against the real service: what is already on the account is
// `already_imported`, as the service's answer says; what only looks like it (a different import) is not.
const SUPPLIER = 'RESEND_SUP';
const TEAM = 'Resend Team';
const ACCOUNT = { import_supplier: SUPPLIER, external_account_number: 'RS-1' };
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-resend' } });
  const tenant = await clientTenant(t, 'Resend Org', SUPPLIER, TEAM);
  service = await startService(t);
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-resend-'));
  const cohort = writeLines('cohort.jsonl', [{ ...validAccountPayload(), ...ACCOUNT }]);
  const migrated = await runClient(
    [
      'migrate',
      cohort,
      '--team',
      TEAM,
      '--quiet',
      '--report',
      join(dir, 'm'),
      '--state',
      join(dir, 'm.sqlite'),
    ],
    env,
  );
  if (migrated.code !== 0) throw new Error(`the account was not created: ${migrated.stderr}`);
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function writeLines(name: string, lines: unknown[]): string {
  const path = join(dir, name);
  writeFileSync(path, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return path;
}

let sends = 0;
/** `post-import <kind> <file>`: its exit code and its one result line. */
async function send(kind: string, file: string): Promise<{ code: number | null; result: ResultLine }> {
  const report = join(dir, `send-${++sends}`);
  const run = await runClient(['post-import', kind, file, '--report', report, '--quiet'], env);
  const results = readResults(report);
  expect(results, run.stderr).toHaveLength(1);
  return { code: run.code, result: results[0]! };
}

it('a file sent again: notes, transactions and statements already there are already_imported', async () => {
  const statement = validStatementsImport().statements[0]!;
  const files = {
    notes: writeLines('notes.jsonl', [{ ...validNotesImport(), ...ACCOUNT }]),
    transactions: writeLines('transactions.jsonl', [{ ...validTransactionsImport(), ...ACCOUNT }]),
    statements: writeLines('statements.jsonl', [{ ...ACCOUNT, statements: [statement] }]),
  };
  for (const [kind, file] of Object.entries(files)) {
    const first = await send(kind, file);
    expect(first.result.outcome, kind).toBe('created');
    expect(first.code, kind).toBe(0);
    const again = await send(kind, file);
    expect({ kind, ...again.result }).toMatchObject({ kind, outcome: 'already_imported', errors: [] });
    expect(again.code, kind).toBe(0);
  }
  // A statements line with one statement already there and a new one: the service wrote nothing of it.
  const mixed = writeLines('statements-mixed.jsonl', [
    {
      ...ACCOUNT,
      statements: [statement, { ...statement, statement_id: 'ST-2025-05', number: 'F2025-000532' }],
    },
  ]);
  const partly = await send('statements', mixed);
  expect(partly.code).toBe(1);
  expect(partly.result).toMatchObject({
    outcome: 'validation_failed',
    http_status: 400,
    errors: [{ code: 'historical_statement_already_exists', attr: 'statements.0.statement_id' }],
  });
});

it('billing documents and payment instructions sent again are already_imported; a different billing import is not', async () => {
  const billing = { ...validBillingDocumentsImport(), ...ACCOUNT };
  const file = writeLines('billing.jsonl', [billing]);
  expect((await send('billing-documents', file)).result.outcome).toBe('created');
  // The same import again: the service names it as the one on the ledger.
  const again = await send('billing-documents', file);
  expect(again.result).toMatchObject({ outcome: 'already_imported', http_status: 400, errors: [] });
  expect(again.code).toBe(0);
  // A different import on the same ledger: refused, and reported as the refusal it is.
  const other = await send(
    'billing-documents',
    writeLines('billing-other.jsonl', [
      {
        ...billing,
        historical_billing_documents: billing.historical_billing_documents.map((d) => ({
          ...d,
          billing_document_identifier: 'FAC-2024-12',
          transactions: d.transactions.map((tr) => ({ ...tr, transaction_id: 'HBD-OTHER' })),
        })),
        additional_historical_transactions: [],
      },
    ]),
  );
  expect(other.result).toMatchObject({
    outcome: 'validation_failed',
    http_status: 400,
    errors: [{ code: 'ledger_has_finalized_billing_document', attr: 'non_field_errors' }],
  });
  expect(other.code).toBe(1);

  // The same instruction again: 201, saying it was already the active one.
  const instruction = writeLines('instruction.jsonl', [
    { ...ACCOUNT, vendor: 'SIMULATED', reference: 'sim_ok_card_4242', type: 'CARD' },
  ]);
  const sent = await send('payment-instructions', instruction);
  expect(sent.result).toMatchObject({ outcome: 'created', http_status: 201, errors: [] });
  const resent = await send('payment-instructions', instruction);
  expect(resent.result).toMatchObject({ outcome: 'already_imported', http_status: 201, errors: [] });
  expect(resent.code).toBe(0);
  // A different instruction on the account: refused, not already_imported.
  const second = await send(
    'payment-instructions',
    writeLines('instruction-other.jsonl', [
      { ...ACCOUNT, vendor: 'SIMULATED', reference: 'sim_ok_card_5555', type: 'CARD' },
    ]),
  );
  expect(second.result).toMatchObject({
    outcome: 'validation_failed',
    http_status: 400,
    errors: [{ code: 'account_has_active_payment_instruction', attr: 'non_field_errors' }],
  });
});
