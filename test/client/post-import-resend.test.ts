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
// `already_imported` where the service's answer says so, and the answers that cannot tell are pinned.
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

it('billing documents and payment instructions answer a repeat as they answer a conflict or a first send', async () => {
  const billing = { ...validBillingDocumentsImport(), ...ACCOUNT };
  const file = writeLines('billing.jsonl', [billing]);
  expect((await send('billing-documents', file)).result.outcome).toBe('created');
  // The same import again, and a different one on the same ledger: the service's answer is the same.
  const again = await send('billing-documents', file);
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
  for (const answer of [again, other])
    expect(answer.result).toMatchObject({
      outcome: 'validation_failed',
      http_status: 400,
      errors: [{ code: 'ledger_has_finalized_billing_document', attr: 'non_field_errors' }],
    });

  // The same instruction again answers 201 as the first did: nothing tells it was there already.
  const instruction = writeLines('instruction.jsonl', [
    { ...ACCOUNT, vendor: 'SIMULATED', reference: 'sim_ok_card_4242', type: 'CARD' },
  ]);
  const sent = await send('payment-instructions', instruction);
  const resent = await send('payment-instructions', instruction);
  for (const answer of [sent, resent])
    expect(answer.result).toMatchObject({ outcome: 'created', http_status: 201, errors: [] });
});
