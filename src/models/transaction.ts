import { Schema, type InferSchemaType } from 'mongoose';

export const transactionOrigins = [
  'historical_statement',
  'current_statement',
  'imported',
  'billing_document',
  'additional_historical',
] as const;

/**
 * One financial transaction on a ledger, under the `_id` derived from (account, transaction id) (see
 * `transactionIdFor`), so existence checks are reads by `_id`; the unique index stays as a second guard. `amount` keeps the exact decimal text; `signedMinor` is its
 * effect on the ledger balance in cents (PAYMENT and CREDIT add; CHARGE, REPAYMENT, SUPPLY_CHARGE subtract).
 * `data` is the transaction as received (serialized JSON) so it can be echoed exactly.
 */
export const transactionSchema = new Schema(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    ledgerId: { type: Schema.Types.ObjectId, required: true },
    transactionId: { type: String, required: true },
    transactionDate: { type: String, required: true },
    originalTransactionDate: { type: String, default: null },
    type: { type: String, required: true },
    amount: { type: String, required: true },
    signedMinor: { type: Number, required: true },
    origin: { type: String, enum: transactionOrigins, required: true },
    billingDocumentId: { type: Schema.Types.ObjectId, default: null },
    note: { type: String, default: null },
    data: { type: String, required: true },
    /** The import request that inserted it (post-import only): how a crashed balance update is finished. */
    batch: { type: String, default: null },
  },
  { timestamps: true, collection: 'transactions' },
);
transactionSchema.index({ accountId: 1, transactionId: 1 }, { unique: true });
transactionSchema.index({ ledgerId: 1, transactionDate: 1 });
export type Transaction = InferSchemaType<typeof transactionSchema>;
