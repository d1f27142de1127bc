import { DigestAccumulator, EMPTY_DIGEST } from '../../domain/reconciliation/digest.js';
import {
  zeroOriginCounts,
  type OriginCounts,
  type TransactionOrigin,
} from '../../vocabulary/transaction-origins.js';

/**
 * The figures reconciliation reads (`src/use-cases/reconciliation/`), kept in the ledger journal's own state so that
 * reading them costs the same for an account of 10 transactions and of 10,000: every entry stores, beside each
 * ledger's balances, its transaction count (by origin), its transaction digest and its billing document count,
 * and an account summary (statements, notes, the active payment instruction), each the previous entry's plus
 * what the entry adds. The journal applies them itself to every entry it writes (`withFigures`), from the
 * entry's records and keys, so no writer can forget them.
 *
 * Counts follow the journal's natural keys, unique per account: an item counts when its key is new to the
 * account. Notes live in their own collection (`storage/notes.ts`); a note counts when an entry carries its key
 * (`n:<dedup key>`), which the writer of a note adds after the note is written (see `post-import/notes.ts`).
 */

/** A ledger's reconciliation figures after an entry. */
export type LedgerFigures = {
  transactionCount: number;
  byOrigin: OriginCounts;
  /** The order-independent digest of its transactions (`domain/reconciliation/digest.ts`). */
  digest: string;
  billingDocumentCount: number;
};

/** The account's figures after an entry. */
export type AccountSummary = {
  statements: number;
  notes: number;
  paymentInstruction: PaymentInstructionSummary | null;
};
export type PaymentInstructionSummary = { vendor: string; status: string };

/** Natural keys: unique per account across the whole journal. */
export const transactionKey = (transactionId: string) => `t:${transactionId}`;
export const statementKey = (statementId: string) => `s:${statementId}`;
export const noteKey = (dedupKey: string) => `n:${dedupKey}`;

export const EMPTY_SUMMARY: AccountSummary = { statements: 0, notes: 0, paymentInstruction: null };

export function zeroFigures(): LedgerFigures {
  return { transactionCount: 0, byOrigin: zeroOriginCounts(), digest: EMPTY_DIGEST, billingDocumentCount: 0 };
}

type FigureRecords = {
  transactions?: ReadonlyArray<{
    transactionId: string;
    ledgerCode: string;
    signedMinor: number;
    origin: TransactionOrigin;
  }>;
  billingDocuments?: ReadonlyArray<{ ledgerCode: string }>;
};

/** What an entry adds to the account, against the keys already on it. */
export type EntryAddition = {
  keys: readonly string[];
  records: FigureRecords;
  /** The account's active payment instruction, when the entry records it. */
  paymentInstruction?: PaymentInstructionSummary;
};

/**
 * Every ledger's figures and the account summary after an entry: the previous ones plus what the entry adds.
 * A transaction, statement or note counts only when its key is new to the account (`known`: the keys before
 * the entry) and to the entry, so an item is never counted twice whoever wrote it.
 */
export function withFigures<L extends { code: string } & LedgerFigures>(
  ledgers: readonly L[],
  summary: AccountSummary,
  known: ReadonlySet<string>,
  entry: EntryAddition,
): { ledgers: L[]; summary: AccountSummary } {
  const here = new Set<string>();
  const isNew = (key: string) => {
    if (known.has(key) || here.has(key)) return false;
    here.add(key);
    return true;
  };
  const next = new Map(ledgers.map((l) => [l.code, new RunningFigures(l)]));
  for (const t of entry.records.transactions ?? []) {
    const figures = next.get(t.ledgerCode);
    if (figures && isNew(transactionKey(t.transactionId))) figures.addTransaction(t);
  }
  for (const d of entry.records.billingDocuments ?? []) next.get(d.ledgerCode)?.addBillingDocument();
  let { statements, notes } = summary;
  for (const key of entry.keys) {
    if (!isNew(key)) continue;
    if (key.startsWith('s:')) statements++;
    else if (key.startsWith('n:')) notes++;
  }
  return {
    ledgers: ledgers.map((l) => ({ ...l, ...next.get(l.code)!.figures() })),
    summary: {
      statements,
      notes,
      paymentInstruction: entry.paymentInstruction ?? summary.paymentInstruction,
    },
  };
}

/** One ledger's figures while an entry's records are added (one running digest, read back once). */
class RunningFigures {
  private transactionCount: number;
  private readonly byOrigin: OriginCounts;
  private readonly digest: DigestAccumulator;
  private billingDocumentCount: number;

  constructor(private readonly ledger: { code: string } & LedgerFigures) {
    this.transactionCount = ledger.transactionCount;
    this.byOrigin = { ...ledger.byOrigin };
    this.digest = new DigestAccumulator(ledger.digest);
    this.billingDocumentCount = ledger.billingDocumentCount;
  }

  addTransaction(t: { transactionId: string; signedMinor: number; origin: TransactionOrigin }): void {
    this.transactionCount++;
    this.byOrigin[t.origin]++;
    this.digest.add(this.ledger.code, t.transactionId, t.signedMinor);
  }

  addBillingDocument(): void {
    this.billingDocumentCount++;
  }

  figures(): LedgerFigures {
    return {
      transactionCount: this.transactionCount,
      byOrigin: this.byOrigin,
      digest: this.digest.hex,
      billingDocumentCount: this.billingDocumentCount,
    };
  }
}

/**
 * The figures of ledgers and account folded from a whole history, for accounts written before the figures
 * were kept (see `LedgerJournal`): the ledgers' transactions and billing documents, the account's distinct
 * statement and note keys, and its active payment instruction as found.
 */
export function figuresFromHistory<L extends { code: string }>(
  ledgers: readonly L[],
  history: FigureRecords & { keys: ReadonlySet<string> },
  paymentInstruction: PaymentInstructionSummary | null,
): { ledgers: Array<L & LedgerFigures>; summary: AccountSummary } {
  const start = ledgers.map((l) => ({ ...l, ...zeroFigures() }));
  // Every key of the history is the entry's own here: each counts once.
  const { ledgers: after, summary } = withFigures(start, EMPTY_SUMMARY, new Set(), {
    keys: [...history.keys],
    records: history,
  });
  return { ledgers: after, summary: { ...summary, paymentInstruction } };
}
