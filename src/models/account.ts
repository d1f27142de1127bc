import { Schema, type InferSchemaType } from 'mongoose';

/**
 * A created account. Nested account data (customers, supply addresses with their points, agreements,
 * readings and billable items, payment schedules, references) lives in this one document, so it is written
 * atomically; records that later imports append to (ledgers, transactions, notes, statements, billing
 * documents, payment instructions) have collections of their own keyed by `accountId`.
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
    customers: { type: [Schema.Types.Mixed], default: [] },
    supplyAddresses: { type: [Schema.Types.Mixed], default: [] },
    paymentSchedules: { type: [Schema.Types.Mixed], default: [] },
    references: { type: [Schema.Types.Mixed], default: [] },
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
