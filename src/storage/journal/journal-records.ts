import type { Transaction } from '../../schemas/transaction.js';
import { signedMinor } from '../../vocabulary/money.js';
import type { TransactionOrigin } from '../../vocabulary/transaction-origins.js';
import type { LedgerFigures } from './journal-figures.js';

/**
 * What a ledger journal entry holds (see `ledger-journal.ts`): every ledger's state, and the records the entry
 * adds (transactions, statements, billing documents), as stored.
 */

/** A ledger's balances after an entry, as its writers decide them. Money in integer minor units (cents). */
export type LedgerBalances = {
  code: string;
  /** Position in the account payload: the first ledger is the default for transaction imports. */
  position: number;
  lastStatementBalanceMinor: number;
  lastStatementClosingDate: string | null;
  /** The first day of the open statement period (the day after the last closed statement). */
  openPeriodStart: string | null;
  balanceMinor: number;
  /** The ledger's one historical billing document import: a hash of the request that made it. */
  billingImportKey: string | null;
};

/** A ledger's state after an entry: its balances and its reconciliation figures. */
export type LedgerState = LedgerBalances & LedgerFigures;

/** A ledger as an entry stores it: entries written before the figures were kept have none. */
export type StoredLedger = LedgerBalances & Partial<LedgerFigures>;

export type StoredTransaction = {
  transactionId: string;
  ledgerCode: string;
  transactionDate: string;
  originalTransactionDate: string | null;
  type: string;
  /** The exact decimal text of the magnitude. */
  amount: string;
  /** Its effect on the ledger balance, in cents. */
  signedMinor: number;
  origin: TransactionOrigin;
  /** The historical billing document it belongs to (its identifier), if any. */
  billingDocument: string | null;
  note: string | null;
  /**
   * The transaction as received, so it can be echoed exactly: kept for imported transactions. A payload's
   * are not kept again (they made up half of an account's first entry): the payload the account was created
   * from holds them as received, for good (under the account's `sourceHash`). Entries written before keep it.
   */
  data?: Record<string, unknown>;
};

export type StoredStatement = {
  statementId: string;
  billPeriodFromDate: string;
  billPeriodToDate: string;
  issuedDate: string | null;
  number: string | null;
  grossAmountMinor: number | null;
  supplyType: string | null;
  documentLocation: string | null;
  origin: 'account_payload' | 'historical_import';
};

export type StoredBillingDocument = {
  ledgerCode: string;
  identifier: string;
  documentType: string;
  issuedDate: string;
  billPeriodFromDate: string | null;
  billPeriodToDate: string | null;
};

export type JournalRecords = {
  transactions?: StoredTransaction[];
  statements?: StoredStatement[];
  billingDocuments?: StoredBillingDocument[];
};

/**
 * A transaction as the journal stores it: exact amount text, signed cents, and (unless `raw` is null: a
 * payload's transaction, see `StoredTransaction.data`) the transaction as received.
 */
export function storedTransaction(
  ledgerCode: string,
  t: Transaction,
  raw: unknown,
  origin: TransactionOrigin,
  extra: {
    transactionDate?: string;
    originalTransactionDate?: string | null;
    note?: string | null;
    billingDocument?: string | null;
  } = {},
): StoredTransaction {
  return {
    transactionId: t.transaction_id,
    ledgerCode,
    transactionDate: extra.transactionDate ?? t.transaction_date,
    originalTransactionDate: extra.originalTransactionDate ?? null,
    type: t.type,
    amount: t.amount,
    signedMinor: signedMinor(t.type, t.amount),
    origin,
    billingDocument: extra.billingDocument ?? null,
    note: extra.note !== undefined ? extra.note : (t.note ?? null),
    ...(raw === null ? {} : { data: (raw ?? t) as Record<string, unknown> }),
  };
}
