import { Types } from 'mongoose';
import { dayAfter } from '../../domain/dates.js';
import { noteDedupKey } from '../../domain/reconciliation/note-keys.js';
import { documentLocation } from '../../domain/document-location.js';
import { toMinor } from '../../vocabulary/money.js';
import type { AccountPayload } from '../../schemas/account.js';
import { noteKey, statementKey, transactionKey } from '../../storage/journal/journal-figures.js';
import {
  storedTransaction,
  type JournalRecords,
  type LedgerBalances,
  type StoredStatement,
  type StoredTransaction,
} from '../../storage/journal/journal-records.js';
import type { NewNote } from '../../storage/records/notes.js';

/**
 * Turns a validated account payload into the documents of every record it creates. Pure: the same payload
 * and account id always give the same documents with the same `_id`s, which is what makes a retried
 * creation converge (an insert of a document that already exists is a duplicate-key no-op).
 */

export type RecordContext = { accountId: Types.ObjectId; bucket: string; documentRoot: string };

/**
 * Entry 0 of the account's ledger journal: every ledger as migrated (balances in cents, the open statement
 * period starting the day after the last closing date), with the payload's transactions and statements, and
 * the keys of its notes (written beside it by the creation: the entry counts them, see `post-import/notes.ts`).
 */
export function buildJournalOpening(
  data: AccountPayload,
  ctx: RecordContext,
): { ledgers: LedgerBalances[]; keys: string[]; records: JournalRecords } {
  const ledgers: LedgerBalances[] = (data.ledgers ?? []).map((ledger, position) => ({
    code: ledger.ledger_code,
    position,
    lastStatementBalanceMinor: toMinor(ledger.last_statement_balance),
    lastStatementClosingDate: ledger.last_statement_closing_date,
    openPeriodStart: dayAfter(ledger.last_statement_closing_date),
    balanceMinor: toMinor(ledger.ledger_balance),
    billingImportKey: null,
  }));
  const transactions = buildTransactions(data);
  const statements = buildStatements(data, ctx);
  return {
    ledgers,
    keys: [
      ...transactions.map((t) => transactionKey(t.transactionId)),
      ...statements.map((s) => statementKey(s.statementId)),
      ...buildNotes(data, ctx).map((n) => noteKey(n.dedupKey)),
    ],
    records: { transactions, statements },
  };
}

/** The payload's transactions, without their text as received (the payload keeps it: `StoredTransaction.data`). */
function buildTransactions(data: AccountPayload): StoredTransaction[] {
  return (data.ledgers ?? []).flatMap((ledger) => [
    ...(ledger.historical_statement_transactions ?? []).map((tx) =>
      storedTransaction(ledger.ledger_code, tx, null, 'historical_statement'),
    ),
    ...(ledger.current_statement_transactions ?? []).map((tx) =>
      storedTransaction(ledger.ledger_code, tx, null, 'current_statement'),
    ),
  ]);
}

/** The payload's notes (their `_id`s follow from the account and dedup key, see `storage.notes.insert`). */
export function buildNotes(data: AccountPayload, ctx: RecordContext): NewNote[] {
  return (data.notes ?? []).map((note) => {
    const { dedupKey, contentHash } = noteDedupKey(note.body, [], note.created_at);
    return {
      accountId: ctx.accountId,
      dedupKey,
      contentHash,
      body: note.body,
      documentPaths: [],
      noteCreatedAt: new Date(note.created_at),
      isPinned: note.is_pinned ?? false,
      unpinAt: note.unpin_at ? new Date(note.unpin_at) : null,
      origin: 'account_payload' as const,
    };
  });
}

function buildStatements(data: AccountPayload, ctx: RecordContext): StoredStatement[] {
  return (data.statements ?? []).map((s) => ({
    statementId: s.statement_id,
    billPeriodFromDate: s.bill_period_from_date,
    billPeriodToDate: s.bill_period_to_date,
    issuedDate: null,
    number: null,
    grossAmountMinor: null,
    supplyType: s.supply_type ?? null,
    documentLocation: documentLocation(ctx.bucket, ctx.documentRoot, s.statement_path),
    origin: 'account_payload' as const,
  }));
}

/** The account document's own fields (everything but its number and links). */
export function accountFields(data: AccountPayload) {
  return {
    accountType: data.account_type,
    billingName: data.billing_name,
    billingAddress1: data.billing_address1 ?? null,
    billingAddress2: data.billing_address2 ?? null,
    billingAddress3: data.billing_address3 ?? null,
    billingAddress4: data.billing_address4 ?? null,
    billingAddress5: data.billing_address5 ?? null,
    billingPostcode: data.billing_postcode ?? null,
    salesChannel: data.sales_channel ?? null,
    salesSubchannel: data.sales_subchannel ?? null,
    communicationPreference: data.communication_preference ?? null,
    customers: JSON.stringify(data.customers),
    supplyAddresses: JSON.stringify(data.supply_addresses ?? []),
    paymentSchedules: JSON.stringify(data.payment_schedules ?? []),
    references: JSON.stringify(data.references ?? []),
    metadata: JSON.stringify(data.metadata ?? []),
  };
}

/** The account holder's e-mail, for the migration e-mail (the first holder that has one). */
export function accountHolderEmail(
  customers: ReadonlyArray<{ account_roles?: string[]; email?: string }>,
): string | null {
  return customers.find((c) => c.account_roles?.includes('ACCOUNT_HOLDER') && c.email)?.email ?? null;
}
