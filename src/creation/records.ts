import { Types } from 'mongoose';
import { documentLocation } from '../domain/document-location.js';
import { signedAmount, toMinor } from '../domain/money.js';
import { ledgerIdFor, noteIdFor, statementIdFor, transactionIdFor } from '../models/record-ids.js';
import { noteDedupKey } from '../models/note.js';
import type { AccountPayload } from '../schemas/account.js';
import type { Transaction } from '../schemas/transaction.js';

/**
 * Turns a validated account payload into the documents of every record it creates. Pure: the same payload
 * and account id always give the same documents with the same `_id`s, which is what makes a retried
 * creation converge (an insert of a document that already exists is a duplicate-key no-op).
 */

type RawPayload = {
  ledgers?: Array<{
    current_statement_transactions?: unknown[];
    historical_statement_transactions?: unknown[];
  }>;
};

export function dayAfter(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

export type RecordContext = { accountId: Types.ObjectId; bucket: string; documentRoot: string };

export function buildLedgers(data: AccountPayload, ctx: RecordContext) {
  return (data.ledgers ?? []).map((ledger, position) => ({
    _id: ledgerIdFor(ctx.accountId, ledger.ledger_code),
    accountId: ctx.accountId,
    ledgerCode: ledger.ledger_code,
    position,
    lastStatementBalanceMinor: toMinor(ledger.last_statement_balance),
    lastStatementClosingDate: ledger.last_statement_closing_date,
    openPeriodStart: dayAfter(ledger.last_statement_closing_date),
    balanceMinor: toMinor(ledger.ledger_balance),
  }));
}

export function buildTransactions(data: AccountPayload, raw: RawPayload, ctx: RecordContext) {
  return (data.ledgers ?? []).flatMap((ledger, li) => {
    const ledgerId = ledgerIdFor(ctx.accountId, ledger.ledger_code);
    const one = (
      tx: Transaction,
      received: unknown,
      origin: 'historical_statement' | 'current_statement',
    ) => ({
      _id: transactionIdFor(ctx.accountId, tx.transaction_id),
      accountId: ctx.accountId,
      ledgerId,
      transactionId: tx.transaction_id,
      transactionDate: tx.transaction_date,
      type: tx.type,
      amount: tx.amount,
      signedMinor: toMinor(signedAmount(tx.type, tx.amount).toFixed(2)),
      origin,
      note: tx.note ?? null,
      // As received, so later reads can echo exactly what the supplier sent.
      data: JSON.stringify(received ?? tx),
    });
    const rawLedger = raw.ledgers?.[li];
    return [
      ...(ledger.historical_statement_transactions ?? []).map((tx, i) =>
        one(tx, rawLedger?.historical_statement_transactions?.[i], 'historical_statement'),
      ),
      ...(ledger.current_statement_transactions ?? []).map((tx, i) =>
        one(tx, rawLedger?.current_statement_transactions?.[i], 'current_statement'),
      ),
    ];
  });
}

export function buildNotes(data: AccountPayload, ctx: RecordContext) {
  return (data.notes ?? []).map((note) => {
    const { dedupKey, contentHash } = noteDedupKey(note.body, [], note.created_at);
    return {
      _id: noteIdFor(ctx.accountId, dedupKey),
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

export function buildStatements(data: AccountPayload, ctx: RecordContext) {
  return (data.statements ?? []).map((s) => ({
    _id: statementIdFor(ctx.accountId, s.statement_id),
    accountId: ctx.accountId,
    statementId: s.statement_id,
    billPeriodFromDate: s.bill_period_from_date,
    billPeriodToDate: s.bill_period_to_date,
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
    customers: data.customers,
    supplyAddresses: data.supply_addresses ?? [],
    paymentSchedules: data.payment_schedules ?? [],
    references: data.references ?? [],
    metadata: JSON.stringify(data.metadata ?? []),
  };
}

/** The account holder's e-mail, for the migration e-mail (the first holder that has one). */
export function accountHolderEmail(
  customers: ReadonlyArray<{ account_roles?: string[]; email?: string }>,
): string | null {
  return customers.find((c) => c.account_roles?.includes('ACCOUNT_HOLDER') && c.email)?.email ?? null;
}
