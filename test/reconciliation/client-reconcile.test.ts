import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realisticAccountPayload, type RealisticAccount } from '../domain/fixtures-realistic.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, runClient, startService } from '../client/support.js';
import { addDays, decimalCents, ledgersOfPayload, money, type RawTransaction } from './support.js';

// `import-client reconcile` end to end: realistic accounts migrated and post-imported with the client itself
// against the real service (web + worker processes, FerretDB, Redis), then reconciled from the same files. What
// each account should hold is worked out here on its own (support.ts: createHash and BigInt), not with the
// client's code, so a mistake on either side shows.

const SUPPLIER = 'RECON_CLI';
const TEAM = 'Recon Team';
const ACCOUNTS = 5;
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let dir: string;

const externals = Array.from({ length: ACCOUNTS }, (_, i) => `REC-CLI-${i + 1}`);
const payloads = new Map<string, RealisticAccount>();

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-reconcile' } });
  const tenant = await clientTenant(t, 'Recon Client Org', SUPPLIER, TEAM);
  service = await startService(t);
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'client-reconcile-'));
}, 240_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function writeLines(name: string, values: unknown[]): string {
  const path = join(dir, name);
  writeFileSync(path, values.map((v) => JSON.stringify(v)).join('\n') + '\n');
  return path;
}

const key = (external: string) => ({ import_supplier: SUPPLIER, external_account_number: external });

/** The transaction import lines of one account: the first ledger (one in the open period, one re-dated), GAS. */
function transactionLines(external: string, i: number): Record<string, unknown>[] {
  const closing = payloads.get(external)!.ledgers[0]!.last_statement_closing_date;
  const electricity: RawTransaction[] = [
    {
      transaction_id: `T-${i}-1`,
      transaction_date: addDays(closing, 12),
      amount: '25.10',
      type: 'PAYMENT',
      payment_type: 'BANK_TRANSFER',
    },
    {
      transaction_id: `T-${i}-2`,
      transaction_date: addDays(closing, -20),
      amount: 3.5,
      type: 'CHARGE',
      reason: 'LATE_PAYMENT_FEE',
    },
  ];
  const gas: RawTransaction[] = [
    {
      transaction_id: `G-${i}-1`,
      transaction_date: addDays(closing, 15),
      amount: '0.07',
      type: 'REPAYMENT',
      payment_type: 'DIRECT_CREDIT',
    },
  ];
  return [
    { ...key(external), transactions: electricity },
    { ...key(external), ledger_code: 'GAS', transactions: gas },
  ];
}

type Line = {
  line: number;
  external_account_number: string | null;
  outcome: string;
  kraken_account_number: string | null;
  errors: { code: string; attr: string }[];
  differences?: { field: string; expected: string | number; actual: string | number }[];
  money_difference?: string;
};
const results = (report: string) =>
  readFileSync(join(report, 'results.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
const summaryOf = (report: string) => JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8'));

let files: {
  cohort: string;
  transactions: string;
  statements: string;
  notes: string;
  billing: string;
  sentTransactions: Record<string, unknown>[];
};

/** `reconcile` of a cohort and a transactions file, with the statements, notes and billing documents sent. */
const reconcile = (cohort: string, transactions: string, report: string) =>
  runClient(
    [
      'reconcile',
      cohort,
      '--transactions',
      transactions,
      '--statements',
      files.statements,
      '--notes',
      files.notes,
      '--billing-documents',
      files.billing,
      '--report',
      report,
      '--quiet',
    ],
    env,
  );

describe('import-client reconcile', () => {
  it(
    'finds every account of a migrated and post-imported cohort matched, from the files that were sent',
    { timeout: 300_000 },
    async () => {
      for (const [i, external] of externals.entries())
        payloads.set(
          external,
          realisticAccountPayload({
            months: 12 + i * 6,
            importSupplier: SUPPLIER,
            externalAccountNumber: external,
          }),
        );
      const cohort = writeLines('cohort.jsonl', [...payloads.values()]);
      const migrated = await runClient(
        ['migrate', cohort, '--team', TEAM, '--report', join(dir, 'migrate'), '--quiet'],
        env,
      );
      expect(migrated.code, migrated.stderr).toBe(0);

      // Transactions: each account's lines; account 1's first line sent twice; account 3 also names a
      // transaction its payload holds (with another amount: the service keeps the payload's).
      const sentTransactions = externals.flatMap((e, i) => transactionLines(e, i + 1));
      sentTransactions.push(sentTransactions[0]!);
      const third = payloads.get(externals[2]!)!.ledgers[0]!;
      sentTransactions.push({
        ...key(externals[2]!),
        transactions: [{ ...third.current_statement_transactions[0]!, amount: '1.00' }],
      });
      const transactions = writeLines('transactions.jsonl', sentTransactions);
      // Notes: the payload's note again, a dated and an undated one; account 2's line sent twice.
      const noteLines = externals.map((e) => ({
        ...key(e),
        notes: [
          { body: payloads.get(e)!.notes[0]!.body, created_at: payloads.get(e)!.notes[0]!.created_at },
          { body: 'Llamada de bienvenida hecha.', created_at: '2025-06-01T09:15:00Z' },
          { body: 'Prefiere factura electrónica.' },
        ],
      }));
      noteLines.push(noteLines[1]!);
      const notes = writeLines('notes.jsonl', noteLines);
      const statements = writeLines(
        'statements.jsonl',
        externals.map((e) => ({
          ...key(e),
          statements: ['2020-01', '2020-02'].map((month) => ({
            bill_period_from_date: `${month}-01`,
            bill_period_to_date: `${month}-28`,
            statement_id: `ST-${e}-${month}`,
            issued_date: `${month}-28`,
            number: `F-${month}`,
            gross_amount: 4210,
          })),
        })),
      );
      const billing = writeLines(
        'billing.jsonl',
        externals.map((e) => ({
          ...key(e),
          ledger_code: 'GAS',
          billing_document_type: 'ITEM_BASED',
          historical_billing_documents: [
            {
              billing_document_identifier: `BD-${e}`,
              billing_document_type: 'ITEM_BASED',
              issued_date: '2021-02-03',
              transactions: [
                {
                  transaction_id: `BD-${e}-A`,
                  transaction_date: '2021-02-03',
                  amount: '40.00',
                  type: 'CHARGE',
                  reason: 'IMPORTED_CHARGE',
                },
                {
                  transaction_id: `BD-${e}-B`,
                  transaction_date: '2021-02-03',
                  amount: '2.15',
                  type: 'CREDIT',
                  reason: 'GENERAL_CREDIT',
                },
              ],
            },
          ],
          additional_historical_transactions: [
            {
              transaction_id: `BD-${e}-X`,
              transaction_date: '2021-03-09',
              amount: '38.40',
              type: 'PAYMENT',
              payment_type: 'DD_REGULAR_COLLECTION',
            },
          ],
        })),
      );
      for (const [kind, file] of [
        ['transactions', transactions],
        ['notes', notes],
        ['billing-documents', billing],
        ['statements', statements],
      ] as const) {
        const sent = await runClient(
          ['post-import', kind, file, '--report', join(dir, `post-${kind}`), '--quiet'],
          env,
        );
        expect(sent.code, `${kind}: ${sent.stdout} ${sent.stderr}`).toBe(0);
      }
      files = { cohort, transactions, statements, notes, billing, sentTransactions };

      const report = join(dir, 'reconciled');
      const run = await reconcile(cohort, transactions, report);
      expect(run.code, run.stderr).toBe(0);
      const got = results(report);
      expect(got.map((r) => [r.external_account_number, r.outcome]).sort()).toEqual(
        externals.map((e) => [e, 'matched']),
      );
      for (const r of got) {
        expect(r.differences).toEqual([]);
        expect(r.money_difference).toBe('0.00');
        expect(r.kraken_account_number).toMatch(/^A-[0-9A-F]{8}$/);
      }
      for (const f of ['results.jsonl', 'results.csv', 'summary.json', 'report.html'])
        expect(existsSync(join(report, f)), f).toBe(true);
      const summary = summaryOf(report);
      expect(summary.by_outcome).toEqual({
        matched: ACCOUNTS,
        mismatched: 0,
        not_created: 0,
        duplicate: 0,
        failed: 0,
        parse_error: 0,
      });
      expect(summary.reconciliation).toMatchObject({
        accounts_compared: ACCOUNTS,
        money_difference: '0.00',
        by_field: {},
      });
      expect(summary.reconciliation.inputs).toMatchObject({
        cohort: { lines: ACCOUNTS, applied: ACCOUNTS, not_in_cohort: 0, unreadable: 0 },
        transactions: { lines: sentTransactions.length, applied: sentTransactions.length, unreadable: 0 },
        notes: { lines: ACCOUNTS + 1, applied: ACCOUNTS + 1 },
      });
      expect(JSON.parse(run.stdout)).toMatchObject({
        outcomes: { matched: ACCOUNTS },
        money_difference: '0.00',
      });
    },
  );

  it(
    'finds a changed amount, a transaction left out and an account never created, with their fields and cents, and nothing else',
    { timeout: 120_000 },
    async () => {
      expect(files, 'the cohort of the first test').toBeDefined();
      const [first, second] = [externals[0]!, externals[1]!];
      // (a) The legacy side says T-1-1 was 26.35, not the 25.10 sent (both of its lines).
      // (b) It also has a payment of 7.40 on account 2 that was never sent.
      // And a line of an account outside the cohort: counted, not compared.
      const closing = payloads.get(second)!.ledgers[0]!.last_statement_closing_date;
      const legacy = files.sentTransactions.map((line) =>
        line.external_account_number === first && line.ledger_code === undefined
          ? {
              ...line,
              transactions: (line.transactions as RawTransaction[]).map((tx) =>
                tx.transaction_id === 'T-1-1' ? { ...tx, amount: '26.35' } : tx,
              ),
            }
          : line,
      );
      const leftOut: RawTransaction = {
        transaction_id: 'T-2-9',
        transaction_date: addDays(closing, 30),
        amount: '7.40',
        type: 'PAYMENT',
        payment_type: 'BANK_TRANSFER',
      };
      legacy.push({ ...key(second), transactions: [leftOut] });
      legacy.push({ ...key('REC-OUTSIDE'), transactions: [leftOut] });
      const transactions = writeLines('transactions-legacy.jsonl', legacy);
      // (c) An account of the cohort that was never created.
      const cohort = writeLines('cohort-legacy.jsonl', [
        ...payloads.values(),
        realisticAccountPayload({
          months: 6,
          importSupplier: SUPPLIER,
          externalAccountNumber: 'REC-CLI-NEVER',
        }),
      ]);
      const report = join(dir, 'reconciled-legacy');
      const run = await reconcile(cohort, transactions, report);
      expect(run.code, run.stderr).toBe(1);

      // What the service holds on each account's first ledger, worked out here from what was sent.
      const electricity = (external: string, sent: RawTransaction[]) => {
        const taken = new Set<string>();
        const ledgers = ledgersOfPayload(
          payloads.get(external)! as unknown as Parameters<typeof ledgersOfPayload>[0],
          taken,
        );
        ledgers[0]!.add(sent, 'imported', taken);
        return ledgers[0]!.body();
      };
      const sentOn = (external: string) =>
        files.sentTransactions
          .filter((l) => l.external_account_number === external && l.ledger_code === undefined)
          .flatMap((l) => l.transactions as RawTransaction[]);
      const firstSent = sentOn(first);
      const firstActual = electricity(first, firstSent);
      const firstExpected = electricity(
        first,
        firstSent.map((tx) => (tx.transaction_id === 'T-1-1' ? { ...tx, amount: '26.35' } : tx)),
      );
      const secondSent = sentOn(second);
      const secondActual = electricity(second, secondSent);
      const secondExpected = electricity(second, [...secondSent, leftOut]);
      // Spelled out, so a slip in the helpers above cannot hide one in the client.
      expect(decimalCents(firstExpected.balance) - decimalCents(firstActual.balance)).toBe(125n);
      expect(decimalCents(secondExpected.balance) - decimalCents(secondActual.balance)).toBe(740n);
      expect(firstActual.balance).toBe(
        money(decimalCents(payloads.get(first)!.ledgers[0]!.ledger_balance) + 2510n - 350n),
      );

      const got = new Map(results(report).map((r) => [r.external_account_number, r]));
      expect(got.size).toBe(ACCOUNTS + 1);
      expect(got.get(first)).toMatchObject({
        outcome: 'mismatched',
        money_difference: '1.25',
        differences: [
          {
            field: 'ledgers.ELECTRICITY.balance',
            expected: firstExpected.balance,
            actual: firstActual.balance,
          },
          {
            field: 'ledgers.ELECTRICITY.transactions.digest',
            expected: firstExpected.transactions.digest,
            actual: firstActual.transactions.digest,
          },
        ],
      });
      expect(got.get(second)).toMatchObject({
        outcome: 'mismatched',
        money_difference: '7.40',
        differences: [
          {
            field: 'ledgers.ELECTRICITY.balance',
            expected: secondExpected.balance,
            actual: secondActual.balance,
          },
          {
            field: 'ledgers.ELECTRICITY.transactions.count',
            expected: secondActual.transactions.count + 1,
            actual: secondActual.transactions.count,
          },
          {
            field: 'ledgers.ELECTRICITY.transactions.digest',
            expected: secondExpected.transactions.digest,
            actual: secondActual.transactions.digest,
          },
          { field: 'ledgers.ELECTRICITY.transactions.by_origin.imported', expected: 3, actual: 2 },
        ],
      });
      expect(got.get('REC-CLI-NEVER')).toMatchObject({
        outcome: 'not_created',
        kraken_account_number: null,
        errors: [{ code: 'not_found', attr: 'non_field_errors' }],
      });
      expect(got.get('REC-CLI-NEVER')!.differences).toBeUndefined();
      for (const e of externals.slice(2))
        expect(got.get(e)).toMatchObject({ outcome: 'matched', differences: [] });

      const summary = summaryOf(report);
      expect(summary.by_outcome).toEqual({
        matched: ACCOUNTS - 2,
        mismatched: 2,
        not_created: 1,
        duplicate: 0,
        failed: 0,
        parse_error: 0,
      });
      expect(summary.reconciliation.money_difference).toBe('8.65');
      expect(summary.reconciliation.by_field).toEqual({
        'ledgers.ELECTRICITY.balance': {
          accounts: 2,
          money_difference: '8.65',
          examples: [
            {
              external_account_number: expect.any(String),
              expected: expect.any(String),
              actual: expect.any(String),
            },
            {
              external_account_number: expect.any(String),
              expected: expect.any(String),
              actual: expect.any(String),
            },
          ],
        },
        'ledgers.ELECTRICITY.transactions.digest': { accounts: 2, examples: expect.any(Array) },
        'ledgers.ELECTRICITY.transactions.count': { accounts: 1, examples: expect.any(Array) },
        'ledgers.ELECTRICITY.transactions.by_origin.imported': { accounts: 1, examples: expect.any(Array) },
      });
      expect(summary.reconciliation.inputs.transactions).toMatchObject({
        lines: legacy.length,
        applied: legacy.length - 1,
        not_in_cohort: 1,
        unreadable: 0,
      });
      const csv = readFileSync(join(report, 'results.csv'), 'utf8');
      expect(csv.split('\n')[0]).toContain(',differences');
      expect(csv).toContain(`ledgers.ELECTRICITY.balance=${firstExpected.balance}->${firstActual.balance}`);
    },
  );

  it('refuses a missing file, a missing key and a batch larger than the service takes (exit 2)', async () => {
    const cohort = writeLines('usage.jsonl', [{ ...key('X') }]);
    const missing = await runClient(['reconcile', join(dir, 'nope.jsonl')], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot read');
    const missingPostImport = await runClient(
      ['reconcile', cohort, '--transactions', join(dir, 'nope.jsonl')],
      env,
    );
    expect(missingPostImport.code).toBe(2);
    const noKey = await runClient(['reconcile', cohort], { IMPORT_BASE_URL: env.IMPORT_BASE_URL! });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('IMPORT_API_KEY');
    const tooMany = await runClient(['reconcile', cohort, '--batch-size', '501'], env);
    expect(tooMany.code).toBe(2);
    const noCohort = await runClient(['reconcile'], env);
    expect(noCohort.code).toBe(2);
  });
});
