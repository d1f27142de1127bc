import { formatCents, toCents } from '../../vocabulary/money.js';
import type { ExpectedFigures } from './expected.js';
import { transactionOrigins } from '../../vocabulary/transaction-origins.js';

/**
 * Expected figures against what the service answered, field by field. Field names follow the answer's shape
 * (`ledgers.<code>.balance`, `ledgers.<code>.transactions.count`, `…digest`, `…by_origin.<origin>`,
 * `ledgers.<code>.billing_documents`, `statements`, `notes`), and `ledgers.<code>` for a ledger one side has and
 * the other does not. Money is compared in exact cents; the money difference is the sum of |expected − actual|
 * over balances (a ledger one side lacks counts its whole balance).
 */

export type Difference = { field: string; expected: string | number; actual: string | number };

/** The parts of a reconciliation answer compared (see `schemas/reconciliation.ts`). */
export type ActualFigures = {
  ledgers: ReadonlyArray<{
    ledger_code: string;
    balance: string;
    transactions: { count: number; digest: string; by_origin: Readonly<Record<string, number>> };
    billing_documents: number;
  }>;
  statements: number;
  notes: number;
};

export type Comparison = { differences: Difference[]; moneyDifferenceCents: bigint };

const abs = (n: bigint) => (n < 0n ? -n : n);

export function compareFigures(expected: ExpectedFigures, actual: ActualFigures): Comparison {
  const differences: Difference[] = [];
  let money = 0n;
  const differ = (field: string, e: string | number, a: string | number) => {
    if (e !== a) differences.push({ field, expected: e, actual: a });
  };
  const actualLedgers = new Map(actual.ledgers.map((l) => [l.ledger_code, l]));
  for (const e of expected.ledgers) {
    const a = actualLedgers.get(e.code);
    const at = `ledgers.${e.code}`;
    if (!a) {
      differences.push({ field: at, expected: 'present', actual: 'absent' });
      money += abs(e.balanceCents);
      continue;
    }
    actualLedgers.delete(e.code);
    const balance = toCents(a.balance);
    if (balance !== e.balanceCents) {
      differences.push({
        field: `${at}.balance`,
        expected: formatCents(e.balanceCents),
        actual: formatCents(balance),
      });
      money += abs(e.balanceCents - balance);
    }
    differ(`${at}.transactions.count`, e.transactionCount, a.transactions.count);
    differ(`${at}.transactions.digest`, e.digest, a.transactions.digest);
    for (const origin of transactionOrigins)
      differ(
        `${at}.transactions.by_origin.${origin}`,
        e.byOrigin[origin],
        a.transactions.by_origin[origin] ?? 0,
      );
    differ(`${at}.billing_documents`, e.billingDocuments, a.billing_documents);
  }
  for (const a of actualLedgers.values()) {
    differences.push({ field: `ledgers.${a.ledger_code}`, expected: 'absent', actual: 'present' });
    money += abs(toCents(a.balance));
  }
  differ('statements', expected.statements, actual.statements);
  differ('notes', expected.notes, actual.notes);
  return { differences, moneyDifferenceCents: money };
}
