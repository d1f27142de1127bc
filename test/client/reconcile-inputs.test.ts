import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Result } from '../../src/cli/client/outcomes.js';
import { readExpectations, type CohortAccount } from '../../src/cli/client/reconcile/expectations.js';
import { ReconcileStore } from '../../src/cli/client/reconcile/store.js';
import { realisticAccountPayload } from '../domain/fixtures-realistic.js';

// What reconcile does with lines it cannot compare: every one is reported or counted, none is guessed at.
const dir = mkdtempSync(join(tmpdir(), 'reconcile-inputs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, lines: string[]) => {
  const path = join(dir, name);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
};

describe('reconcile inputs', () => {
  it('reports unparsable, unusable and repeated cohort lines, and counts post-import lines it cannot use', async () => {
    const account = (external: string) =>
      realisticAccountPayload({ months: 6, importSupplier: 'ACME', externalAccountNumber: external });
    const cohort = write('cohort.jsonl', [
      JSON.stringify(account('A-1')),
      '{"import_supplier": "ACME", ',
      JSON.stringify({
        ...account('A-2'),
        ledgers: [{ ...account('A-2').ledgers[0], ledger_balance: '1.234' }],
      }),
      // The same account, typed with stray spaces: the service keys it as A-1.
      JSON.stringify(account(' A-1 ')),
      JSON.stringify(account('A-3')),
    ]);
    const tx = (external: string) =>
      JSON.stringify({
        import_supplier: 'ACME',
        external_account_number: external,
        transactions: [
          { transaction_id: 'X', transaction_date: '2030-01-01', amount: '1.00', type: 'PAYMENT' },
        ],
      });
    const transactions = write('tx.jsonl', [
      tx('A-1'),
      tx('NOT-IN-COHORT'),
      'not json',
      '{"transactions": []}',
    ]);
    const reported: Result[] = [];
    const accounts = new Map<string, CohortAccount>();
    const store = new ReconcileStore(dir);
    const inputs = await readExpectations(
      cohort,
      { transactions: [transactions], 'billing-documents': [], statements: [], notes: [] },
      store,
      (r) => reported.push(r),
      (a) => void accounts.set(a.external, a),
    );
    store.close();
    expect([...accounts.values()].map((a) => [a.line, a.external])).toEqual([
      [1, 'A-1'],
      [5, 'A-3'],
    ]);
    expect(reported.map((r) => [r.line, r.outcome, r.external_account_number, r.errors])).toEqual([
      [2, 'parse_error', null, [{ code: 'parse_error', attr: 'non_field_errors' }]],
      [3, 'failed', 'A-2', [{ code: 'too_many_decimal_places', attr: 'ledgers.0.ledger_balance' }]],
      [4, 'duplicate', 'A-1', [{ code: 'duplicate_account', attr: 'line:1' }]],
    ]);
    expect(inputs).toEqual({
      cohort: { lines: 5, applied: 2, not_in_cohort: 0, unreadable: 2 },
      transactions: {
        lines: 4,
        applied: 1,
        not_in_cohort: 1,
        unreadable: 2,
        unreadable_lines: [`${transactions}:3`, `${transactions}:4`],
      },
    });
    // The one line applied moved A-1's first ledger by 1.00 and added one imported transaction.
    const a1 = accounts.get('A-1')!.figures.ledgers[0]!;
    const a3 = accounts.get('A-3')!.figures.ledgers[0]!;
    expect(a1.balanceCents - a3.balanceCents).toBe(100n);
    expect(a1.byOrigin.imported).toBe(1);
    // The store on disk is gone with the run.
    expect(readdirSync(dir).filter((f) => f.startsWith('import-client-reconcile-'))).toEqual([]);
  });
});
