import { Schema, type InferSchemaType } from 'mongoose';

/**
 * A created account. Nested account data (customers, supply addresses with their points, agreements,
 * readings and billable items, payment schedules, references) lives in this one document, so it is written
 * atomically; what later imports append to has its own place: the ledger journal (ledgers, transactions,
 * statements, billing documents), notes and payment instructions, keyed by the account's `_id`.
 * `metadata` is serialized JSON: its values are arbitrary objects whose keys may contain `.` or `$`.
 */
export const accountSchema = new Schema(
  {
    number: { type: String, required: true, unique: true },
    organisationId: { type: Schema.Types.ObjectId, required: true },
    importSupplier: { type: String, required: true },
    externalAccountNumber: { type: String, required: true },
    /**
     * The import process's `_id`: its natural key (a string, see `processKey`). Mixed only so that seeds
     * written when process ids were ObjectIds still compile; creation always stores the string key.
     */
    processId: { type: Schema.Types.Mixed, required: true },
    operationsTeamId: { type: Schema.Types.ObjectId, required: true },
    accountType: { type: String, required: true },
    billingName: { type: String, required: true },
    billingAddress1: { type: String, default: null },
    billingAddress2: { type: String, default: null },
    billingAddress3: { type: String, default: null },
    billingAddress4: { type: String, default: null },
    billingAddress5: { type: String, default: null },
    billingPostcode: { type: String, default: null },
    salesChannel: { type: String, default: null },
    salesSubchannel: { type: String, default: null },
    communicationPreference: { type: String, default: null },
    /**
     * The account's nested data as JSON text: never queried, and on FerretDB's SQLite backend a write costs per
     * BSON value, so the realistic account's nested data as sub-documents cost the database 1.6 ms against
     * 0.3 ms as text (measured). Read with `accountNested`.
     */
    customers: { type: String, default: '[]' },
    supplyAddresses: { type: String, default: '[]' },
    paymentSchedules: { type: String, default: '[]' },
    references: { type: String, default: '[]' },
    metadata: { type: String, default: '[]' },
    /**
     * sha256 of the staged payload (as received) the account was created from: a resumed creation reads that
     * payload again, from the archive of replaced payloads if it was re-staged since (see `creation/staging.ts`).
     */
    sourceHash: { type: String, default: null },
    /** Legacy: accounts created before `sourceHash` kept the payload itself. Never written any more. */
    sourcePayload: { type: String },
    /** Migration e-mail: null (not wanted), pending, sending, sent, skipped (no SMTP / no address), uncertain. */
    migrationEmailStatus: { type: String, default: null },
    migrationEmailAt: { type: Date, default: null },
  },
  { timestamps: true, collection: 'accounts' },
);
accountSchema.index({ importSupplier: 1, externalAccountNumber: 1 }, { unique: true });
accountSchema.index({ processId: 1 }, { unique: true });
export type Account = InferSchemaType<typeof accountSchema>;

/** One of an account's nested lists, parsed from its JSON text. */
export function accountNested<T = Record<string, unknown>>(
  account: Pick<Account, 'customers' | 'supplyAddresses' | 'paymentSchedules' | 'references'>,
  field: 'customers' | 'supplyAddresses' | 'paymentSchedules' | 'references',
): T[] {
  return JSON.parse(account[field]) as T[];
}
