import { Schema, type Connection, type InferSchemaType } from 'mongoose';

/**
 * A ledger of an account, under the `_id` derived from (account, ledger code) (see `ledgerIdFor`), so it is
 * read by `_id` alone: the only filter FerretDB's SQLite backend answers without reading the whole collection.
 * Money is held as integer minor units (cents). `openPeriodStart` is the first day of the open statement
 * period (the day after the last closed statement). Every write happens under the ledger lock.
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
    /**
     * An import's balance change in flight: written before its transactions are inserted, cleared in the
     * same write that applies their total. A leftover journal (the writer crashed) is finished by the next
     * holder of the ledger lock from the transactions that carry `batch`.
     */
    journal: {
      type: new Schema(
        {
          batch: { type: String, required: true },
          transactionIds: { type: [Schema.Types.ObjectId], default: [] },
        },
        { _id: false },
      ),
      default: null,
    },
  },
  { timestamps: true, collection: 'ledgers' },
);
ledgerSchema.index({ accountId: 1, ledgerCode: 1 }, { unique: true });
export type Ledger = InferSchemaType<typeof ledgerSchema>;

/**
 * The ledger codes of an account in payload order, under the account's `_id`: how "the account's first
 * ledger" is found without a query on `accountId`. Ledgers are only created with their account, so this is
 * written once (from one lookup of the account's ledgers) and never changes.
 */
export const accountLedgersSchema = new Schema(
  { _id: { type: Schema.Types.ObjectId, required: true }, codes: { type: [String], required: true } },
  { collection: 'account_ledgers', versionKey: false },
);

/** The model on a connection, registered on first use (it has no index beyond `_id`). */
export function accountLedgersModel(conn: Connection) {
  return (
    (conn.models.AccountLedgers as ReturnType<typeof registerAccountLedgers> | undefined) ??
    registerAccountLedgers(conn)
  );
}

function registerAccountLedgers(conn: Connection) {
  return conn.model('AccountLedgers', accountLedgersSchema);
}
