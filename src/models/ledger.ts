import { Schema, type InferSchemaType } from 'mongoose';

/**
 * A ledger of an account. Money is held as integer minor units (cents): exact, and `$inc` on integers is
 * atomic on every MongoDB-compatible server (FerretDB v1 has no Decimal128 arithmetic).
 * `openPeriodStart` is the first day of the open statement period (the day after the last closed statement).
 */
export const ledgerSchema = new Schema(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    ledgerCode: { type: String, required: true },
    /** Position in the account payload: the first ledger is the default for transaction imports. */
    position: { type: Number, required: true },
    lastStatementBalanceMinor: { type: Number, required: true },
    lastStatementClosingDate: { type: String, default: null },
    openPeriodStart: { type: String, default: null },
    balanceMinor: { type: Number, required: true },
    hasFinalizedBillingDocument: { type: Boolean, default: false },
    /** Claim of the one historical billing document import: a hash of that request, and when it finished. */
    billingImportKey: { type: String, default: null },
    billingImportCompletedAt: { type: Date, default: null },
  },
  { timestamps: true, collection: 'ledgers' },
);
ledgerSchema.index({ accountId: 1, ledgerCode: 1 }, { unique: true });
export type Ledger = InferSchemaType<typeof ledgerSchema>;
