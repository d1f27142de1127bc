import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareFigures, type ActualFigures } from '../../src/domain/reconciliation/compare.js';
import { AccountExpectation } from '../../src/domain/reconciliation/expected.js';
import {
  accountFacts,
  statementsImportFacts,
  transactionsImportFacts,
} from '../../src/domain/reconciliation/inputs.js';
import { redatingNoteKey } from '../../src/domain/reconciliation/note-keys.js';
import { BALANCE_ORIGINS } from '../../src/vocabulary/transaction-origins.js';
import { formatCents, toMinor } from '../../src/vocabulary/money.js';
import { transactionSchema } from '../../src/schemas/transaction.js';
import {
  EMPTY_SUMMARY,
  noteKey,
  transactionKey,
  withFigures,
  zeroFigures,
  type AccountSummary,
  type LedgerFigures,
} from '../../src/storage/journal/journal-figures.js';
import { storedTransaction, type StoredTransaction } from '../../src/storage/journal/journal-records.js';
import { decimalCents, independentDigest } from '../reconciliation/support.js';

// The client's expected side (AccountExpectation, fed the raw files' JSON) against, on the same generated data,
// (1) the service's own figures code (the journal's `withFigures` over records made by `storedTransaction` from
// the service's transaction schema, duplicates left out as the import's plan leaves them, the balance moved by
// BALANCE_ORIGINS) and (2) an independent computation (createHash and BigInt, test/reconciliation/support.ts).

const TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE'] as const;
type Type = (typeof TYPES)[number];

const idArb = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 16 })
  .filter((s) => s.trim() === s && ![...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f));

/** An amount as a legacy export may write it: a number, a 2-decimal string, fewer decimals, leading zeros. */
const amountArb = fc
  .record({ cents: fc.integer({ min: 0, max: 999_999_999 }), form: fc.integer({ min: 0, max: 3 }) })
  .map(({ cents, form }) => {
    const units = Math.floor(cents / 100);
    const fraction = String(cents % 100).padStart(2, '0');
    if (form === 0) return { cents, amount: Number(`${units}.${fraction}`) as string | number };
    if (form === 1) return { cents, amount: `${units}.${fraction}` };
    if (form === 2) return { cents, amount: `00${units}.${fraction}0` };
    return { cents, amount: cents % 100 === 0 ? String(units) : `${units}.${fraction}` };
  });

const transactionArb = fc.record({
  id: idArb,
  pad: fc.boolean(),
  type: fc.constantFrom(...TYPES),
  amount: amountArb,
  day: fc.integer({ min: 1, max: 28 }),
});
type Generated = {
  id: string;
  pad: boolean;
  type: Type;
  amount: { cents: number; amount: string | number };
  day: number;
};

const raw = (t: Generated) => ({
  // Padded ids are trimmed by the schema, on both sides.
  transaction_id: t.pad ? ` ${t.id} ` : t.id,
  transaction_date: `2025-05-${String(t.day).padStart(2, '0')}`,
  amount: t.amount.amount,
  type: t.type,
  ...(t.type === 'PAYMENT' || t.type === 'REPAYMENT'
    ? { payment_type: 'DIRECT_CREDIT' }
    : { reason: 'IMPORTED_CHARGE' }),
});

const key = { import_supplier: 'ACME', external_account_number: 'A-1' };

function payload(historical: Generated[], current: Generated[], balance: string) {
  return {
    ...key,
    ledgers: [
      {
        ledger_code: 'ELECTRICITY',
        ledger_balance: balance,
        last_statement_closing_date: '2025-05-14',
        historical_statement_transactions: historical.map(raw),
        current_statement_transactions: current.map(raw),
      },
    ],
  };
}

type ServiceLedger = { code: string; balanceMinor: number } & LedgerFigures;

/** The service's figures after the payload then each import, through its own code. */
function serviceSide(
  p: ReturnType<typeof payload>,
  imports: Generated[][],
): { ledger: ServiceLedger; summary: AccountSummary } {
  const l = p.ledgers[0]!;
  const record = (t: unknown, origin: StoredTransaction['origin']) =>
    storedTransaction(l.ledger_code, transactionSchema.parse(t), t, origin);
  const opening = [
    ...l.historical_statement_transactions.map((t) => record(t, 'historical_statement')),
    ...l.current_statement_transactions.map((t) => record(t, 'current_statement')),
  ];
  const start: ServiceLedger[] = [
    { code: l.ledger_code, balanceMinor: toMinor(l.ledger_balance), ...zeroFigures() },
  ];
  let { ledgers, summary } = withFigures(start, EMPTY_SUMMARY, new Set(), {
    keys: opening.map((t) => transactionKey(t.transactionId)),
    records: { transactions: opening },
  });
  const known = new Set(opening.map((t) => transactionKey(t.transactionId)));
  for (const batch of imports) {
    // The import's plan: ids already on the account are not written again.
    const records = batch
      .map((t) => record(raw(t), 'imported'))
      .filter((t) => !known.has(transactionKey(t.transactionId)));
    const delta = records.reduce((s, t) => (BALANCE_ORIGINS.has(t.origin) ? s + t.signedMinor : s), 0);
    const moved = ledgers.map((x) => ({ ...x, balanceMinor: x.balanceMinor + delta }));
    // Transactions dated before the open period (from 2025-05-15) are re-dated, with one note per request.
    const redated = records.filter((t) => t.transactionDate < '2025-05-15').map((t) => t.transactionId);
    const note = redated.length > 0 ? [noteKey(redatingNoteKey(l.ledger_code, redated).dedupKey)] : [];
    ({ ledgers, summary } = withFigures(moved, summary, known, {
      keys: [...records.map((t) => transactionKey(t.transactionId)), ...note],
      records: { transactions: records },
    }));
    for (const t of records) known.add(transactionKey(t.transactionId));
  }
  return { ledger: ledgers[0]!, summary };
}

/** The same, worked out independently: first id wins, signed cents from the text, createHash and BigInt. */
function independentSide(
  historical: Generated[],
  current: Generated[],
  balance: string,
  imports: Generated[][],
) {
  const stored = new Map<string, bigint>();
  let cents = decimalCents(balance);
  const add = (t: Generated, moves: boolean) => {
    const r = raw(t);
    const id = r.transaction_id.trim();
    if (stored.has(id)) return;
    // From the generated cents, not the text: the amount's forms ("00012.340", numbers) are the client's job.
    const signed = (t.type === 'PAYMENT' || t.type === 'CREDIT' ? 1n : -1n) * BigInt(t.amount.cents);
    stored.set(id, signed);
    if (moves) cents += signed;
  };
  for (const t of [...historical, ...current]) add(t, false);
  for (const batch of imports) for (const t of batch) add(t, true);
  return {
    count: stored.size,
    balanceCents: cents,
    digest: independentDigest(
      'ELECTRICITY',
      [...stored].map(([id, c]) => ({ id, cents: c })),
    ),
  };
}

const uniqueBatch = (max: number) =>
  fc.uniqueArray(transactionArb, { selector: (t) => t.id, minLength: 0, maxLength: max });

describe('the client’s expected figures', () => {
  it('agree with the service’s figures code and an independent computation on generated accounts and imports', () => {
    fc.assert(
      fc.property(
        uniqueBatch(15),
        uniqueBatch(15),
        fc.integer({ min: -99_999_999, max: 99_999_999 }),
        fc.array(uniqueBatch(12), { maxLength: 4 }),
        (historicalAll, currentAll, balanceCents, imports) => {
          // Ids are unique within the payload, as its validation requires; imports may repeat any of them.
          const seen = new Set(historicalAll.map((t) => t.id));
          const current = currentAll.filter((t) => !seen.has(t.id));
          const balance = formatCents(BigInt(balanceCents));
          const p = payload(historicalAll, current, balance);

          const expectation = new AccountExpectation(accountFacts.parse(p));
          for (const batch of imports)
            if (batch.length > 0)
              expectation.addTransactions(
                transactionsImportFacts.parse({ ...key, transactions: batch.map(raw) }),
              );
          const client = expectation.figures().ledgers[0]!;
          const service = serviceSide(p, imports);
          const independent = independentSide(historicalAll, current, balance, imports);

          expect(client.digest).toBe(service.ledger.digest);
          expect(client.digest).toBe(independent.digest);
          expect(client.transactionCount).toBe(service.ledger.transactionCount);
          expect(client.transactionCount).toBe(independent.count);
          expect(client.byOrigin).toEqual(service.ledger.byOrigin);
          expect(client.balanceCents).toBe(BigInt(service.ledger.balanceMinor));
          expect(client.balanceCents).toBe(independent.balanceCents);
          // And the comparison finds nothing between the client's figures and the service's as answered.
          const answered = {
            ledgers: [
              {
                ledger_code: 'ELECTRICITY',
                balance: formatCents(BigInt(service.ledger.balanceMinor)),
                transactions: {
                  count: service.ledger.transactionCount,
                  digest: service.ledger.digest,
                  by_origin: service.ledger.byOrigin,
                },
                billing_documents: service.ledger.billingDocumentCount,
              },
            ],
            statements: service.summary.statements,
            notes: service.summary.notes,
          };
          expect(compareFigures(expectation.figures(), answered)).toEqual({
            differences: [],
            moneyDifferenceCents: 0n,
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('name every field that differs, with exact money, and nothing else', () => {
    const p = payload([], [], '-120.50');
    const expectation = new AccountExpectation(accountFacts.parse(p));
    const figures = expectation.figures();
    const answered: ActualFigures = {
      ledgers: [
        {
          ledger_code: 'ELECTRICITY',
          balance: '-110.50',
          transactions: { count: 1, digest: 'f'.repeat(64), by_origin: { imported: 1 } },
          billing_documents: 0,
        },
        {
          ledger_code: 'GAS',
          balance: '-0.07',
          transactions: { count: 0, digest: '0'.repeat(64), by_origin: {} },
          billing_documents: 0,
        },
      ],
      statements: 2,
      notes: 0,
    };
    expect(compareFigures(figures, answered)).toEqual({
      differences: [
        { field: 'ledgers.ELECTRICITY.balance', expected: '-120.50', actual: '-110.50' },
        { field: 'ledgers.ELECTRICITY.transactions.count', expected: 0, actual: 1 },
        {
          field: 'ledgers.ELECTRICITY.transactions.digest',
          expected: '0'.repeat(64),
          actual: 'f'.repeat(64),
        },
        { field: 'ledgers.ELECTRICITY.transactions.by_origin.imported', expected: 0, actual: 1 },
        { field: 'ledgers.GAS', expected: 'absent', actual: 'present' },
        { field: 'statements', expected: 0, actual: 2 },
      ],
      moneyDifferenceCents: 1007n,
    });
  });

  it('count notes and statements as the service dedups them', () => {
    const facts = accountFacts.parse({
      ...key,
      ledgers: [],
      statements: [{ statement_id: 'S-1' }],
      notes: [{ body: 'Hola', created_at: '2025-01-01T00:00:00Z' }],
    });
    const e = new AccountExpectation(facts);
    // The payload's statement again, and one whose id the schema trims.
    e.addStatements(
      statementsImportFacts.parse({
        ...key,
        statements: [{ statement_id: 'S-1' }, { statement_id: ' S-2 ' }],
      }),
    );
    e.addStatements(statementsImportFacts.parse({ ...key, statements: [{ statement_id: 'S-2' }] }));
    // The payload's note undated (matches by content), the same note with another date (new), a document note
    // twice in one request (one), and in one request a dated note and the same content undated: the undated one
    // is new too, since the service looks contents up as they were before the request.
    e.addNotes({ ...key, notes: [{ body: 'Hola' }] });
    e.addNotes({ ...key, notes: [{ body: 'Hola', created_at: '2025-02-01T00:00:00Z' }] });
    e.addNotes({
      ...key,
      notes: [
        { document_paths: [{ document_path: 'a//b.pdf' }] },
        { document_paths: [{ document_path: '/a/b.pdf' }] },
      ],
    });
    e.addNotes({ ...key, notes: [{ body: 'Nueva', created_at: '2025-03-01T00:00:00Z' }, { body: 'Nueva' }] });
    expect(e.figures()).toMatchObject({ statements: 2, notes: 5 });
  });
});
